import { Verifier, type VerifierOutput } from "tlsn-wasm";
import type { SessionSizes } from "../core/session-sizes.ts";
import { type EngineOptions, startEngine } from "./wasm.ts";
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

/** A Verifier in this process's wasm instance (startEngine must have resolved). */
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

/**
 * A LocalVerifier made once the engine has started, at its session's `verify`: a notary starts its engine at the
 * first MPC session, so one that only relays (proxy mode) never loads it (0.36 CPU s and 50-60 MiB at start).
 */
class EngineStartingVerifier implements EngineVerifier {
  private local: LocalVerifier | undefined;
  private released = false;

  constructor(
    private readonly engine: EngineOptions,
    private readonly sizes: SessionSizes,
  ) {}

  async verify(peerUrl: string, connected: () => void): Promise<VerifierOutput> {
    await startEngine(this.engine);
    if (this.released) throw new Error("the session ended while the engine started");
    this.local = new LocalVerifier(this.sizes);
    return this.local.verify(peerUrl, connected);
  }

  free(): void {
    this.released = true;
    this.local?.free();
  }

  abandon(): void {
    this.released = true;
    this.local?.abandon();
  }
}

/** Verifiers in this process's wasm instance, started with `engine` at the first one's `verify` (once per process). */
export const localVerifiers = (engine: EngineOptions): EngineVerifiers => ({
  create: (sizes) => new EngineStartingVerifier(engine, sizes),
});
