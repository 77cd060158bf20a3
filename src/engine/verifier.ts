import { Verifier, type VerifierOutput } from "tlsn-wasm";
import type { SessionSizes } from "../core/session-sizes.ts";
import { WasmObjectCalls } from "./wasm-object.ts";

export type { VerifierOutput } from "tlsn-wasm";

/**
 * One notary-side Verifier, wherever its wasm runs (this process or an engine host). Calls fail with the
 * engine's own error text.
 */
export interface EngineVerifier {
  /**
   * Dials the socket that carries the prover's MPC bytes (the notary's loopback bridge), then runs the session
   * with the prover to its end and checks it; what the prover revealed comes back. `connected` is called once the
   * Verifier is reading its socket: bytes reach it from then on, none may be sent before (the engine's client
   * drops them).
   */
  verify(peerUrl: string, connected: () => void): Promise<VerifierOutput>;
  /** Releases its engine memory (again: nothing happens). */
  free(): void;
  /** Gives up a call that may never end: its memory comes back as soon as the engine allows. */
  abandon(): void;
}

/** Where Verifiers are made. */
export interface EngineVerifiers {
  /** A Verifier for the notary session `notarySession` of these sizes; throws over_capacity when no engine has room. */
  create(sizes: SessionSizes, notarySession: string): EngineVerifier;
}

/** A Verifier in this process's wasm instance (startEngine must have run). */
export class LocalVerifier implements EngineVerifier {
  private readonly verifier: Verifier;
  private readonly calls: WasmObjectCalls;

  constructor(sizes: SessionSizes) {
    const verifier = new Verifier({
      max_sent_data: sizes.maxSentData,
      max_recv_data: sizes.maxRecvData,
      max_sent_records: undefined,
      max_recv_records_online: undefined,
    });
    this.verifier = verifier;
    this.calls = new WasmObjectCalls(() => verifier.free());
  }

  async verify(peerUrl: string, connected: () => void): Promise<VerifierOutput> {
    await this.calls.track(this.verifier.connect(peerUrl));
    const verified = this.calls.track(this.verifier.verify());
    connected();
    return verified;
  }

  free(): void {
    this.calls.free();
  }

  /** In one wasm instance nothing can end a hung call: the Verifier is freed if it ever settles. */
  abandon(): void {
    this.calls.free();
  }
}

export const localVerifiers: EngineVerifiers = { create: (sizes) => new LocalVerifier(sizes) };
