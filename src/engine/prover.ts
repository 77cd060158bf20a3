import { type HttpResponse, Prover } from "tlsn-wasm";
import type { AnswerHead, ExchangeRequest, ExchangedBytes } from "../core/exchange.ts";
import type { ByteRange } from "../core/transcript.ts";
import type { SessionSizes } from "../core/session-sizes.ts";
import type { BackgroundWork } from "./background.ts";
import type { EngineSocketStats } from "./socket-stats.ts";
import { drawHeaderOrder } from "./header-order.ts";
import { WasmObjectCalls } from "./wasm-object.ts";

/** One exchange as the engine made it: the answer's head, both directions' bytes. */
export interface EngineExchange extends ExchangedBytes {
  response: AnswerHead;
}

export interface RevealedRanges {
  sent: ByteRange[];
  recv: ByteRange[];
}

/**
 * One engine prover, wherever its wasm runs (this process or an engine host). Calls fail with the engine's
 * own error text; `session.ts` explains it.
 */
export interface EngineProver {
  /** MPC preprocessing with the notary behind this WebSocket URL: the slow part. */
  setup(notarizeUrl: string): Promise<void>;
  /** MPC-TLS handshake and one HTTP/1.1 exchange over a WebSocket that carries bytes to the target. */
  sendRequest(tcpUrl: string, request: ExchangeRequest): Promise<EngineExchange>;
  reveal(revealed: RevealedRanges): Promise<void>;
  /** Releases the prover's engine memory (again: nothing happens). */
  free(): void;
  /**
   * Gives up a call that may never end (a notary that died during setup leaves the engine waiting for good):
   * its memory comes back as soon as the engine allows.
   */
  abandon(): void;
  /** Milliseconds its engine has run, its host's pauses left out (a setup watch's clock); without it, wall-clock time. */
  runningMs?(): number;
  /** What its MPC socket with the notary carried, as the engine's process saw it (a stalled setup's story). */
  notarySocketStats?(): Promise<EngineSocketStats[]>;
}

/** Where provers are made. */
export interface EngineProvers {
  /**
   * A prover bound to this server name and these sizes; throws over_capacity when no engine has room. A
   * `background` prover's setup may be paused while live work runs (engine hosts only).
   */
  create(serverName: string, sizes: SessionSizes, background?: BackgroundWork): EngineProver;
}

const encoder = new TextEncoder();

/** The engine's answer head, header values as bytes, as text of one char per byte (AnswerHead): the engine's shapes stop here. */
const answerHead = (response: HttpResponse): AnswerHead => ({
  status: response.status,
  headers: response.headers.map(([name, value]) => [name, Buffer.from(value).toString("latin1")]),
});

/** A prover in this process's wasm instance (startEngine must have run). */
export class LocalProver implements EngineProver {
  private readonly prover: Prover;
  private readonly calls: WasmObjectCalls;

  constructor(serverName: string, sizes: SessionSizes) {
    const prover = new Prover({
      server_name: serverName,
      max_sent_data: sizes.maxSentData,
      max_sent_records: undefined,
      max_recv_data_online: undefined,
      max_recv_data: sizes.maxRecvData,
      max_recv_records_online: undefined,
      defer_decryption_from_start: undefined,
      network: "Latency",
      client_auth: undefined,
    });
    this.prover = prover;
    this.calls = new WasmObjectCalls(() => prover.free());
  }

  setup(notarizeUrl: string): Promise<void> {
    return this.calls.track(this.prover.setup(notarizeUrl));
  }

  async sendRequest(tcpUrl: string, request: ExchangeRequest): Promise<EngineExchange> {
    const headers = new Map<string, number[]>();
    for (const [name, value] of request.headers) headers.set(name, [...encoder.encode(value)]);
    await drawHeaderOrder();
    const response = await this.calls.track(
      this.prover.send_request(tcpUrl, {
        uri: request.pathAndQuery,
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : (request.body as never),
      }),
    );
    const transcript = this.prover.transcript();
    return { response: answerHead(response), sent: Uint8Array.from(transcript.sent), recv: Uint8Array.from(transcript.recv) };
  }

  reveal(revealed: RevealedRanges): Promise<void> {
    return this.calls.track(this.prover.reveal({ sent: revealed.sent, recv: revealed.recv, server_identity: true }));
  }

  free(): void {
    this.calls.free();
  }

  /** In one wasm instance nothing can end a hung call: the prover is freed if it ever settles. */
  abandon(): void {
    this.calls.free();
  }
}

export const localProvers: EngineProvers = { create: (serverName, sizes) => new LocalProver(serverName, sizes) };
