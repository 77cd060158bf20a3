import { untilAborted } from "../../base/abort.ts";
import type { BackgroundWork } from "../background.ts";
import type { EngineSocketStats } from "../socket-stats.ts";
import { runningTimeout } from "../paused-time.ts";
import type { ExchangeRequest } from "../../core/exchange.ts";
import type { EngineExchange, EngineProver, RevealedRanges } from "../prover.ts";
import type { EngineVerifier, VerifierOutput } from "../verifier.ts";
import type { EngineHost } from "./engine-host.ts";
import type { HostCalls } from "./placement.ts";

/**
 * Provers and Verifiers living in an engine host, as the parent holds them: each call goes to the host and is
 * counted for placement and pausing (`EngineHosts`), and a call that never ends is reported.
 */

/** What a running call counts as in `hostsToPause`, asked each time; a Verifier's call counts as nothing. */
export type CallRole = () => keyof HostCalls | undefined;

/** What a hosted object tells its hosts: its calls, a change in what they count as, and its end. */
export interface HostedEvents {
  /** A call starts; the function returned is called when it ends. */
  calling(role: CallRole): () => void;
  changed(): void;
  freed(): void;
  hung(): void;
}

/** A wasm object living in an engine host: its calls, its end, and a call that never ends. */
class HostedObject {
  private running = 0;
  private ended = false;
  protected abandoned = false;
  private cancelHang = () => {};

  constructor(
    readonly host: EngineHost,
    protected readonly id: number,
    private readonly hangMs: number,
    protected readonly events: HostedEvents,
  ) {}

  free(): void {
    if (this.ended) return;
    this.ended = true;
    this.cancelHang();
    this.events.freed();
  }

  /**
   * Nothing runs: freed now. A call runs: it gets `hangMs` of its host's running time to end (a paused host's
   * calls cannot), else the host counts it as hung.
   */
  abandon(): void {
    if (this.ended || this.abandoned) return;
    this.abandoned = true;
    if (this.running === 0) return this.free();
    this.events.changed();
    this.cancelHang = runningTimeout(() => this.host.pausedTime.ms(), this.hangMs, () => {
      if (this.ended) return;
      this.ended = true;
      this.events.hung();
    });
  }

  protected async call(command: Parameters<EngineHost["call"]>[0], role: CallRole, connected?: () => void) {
    this.running += 1;
    const ended = this.events.calling(role);
    try {
      return await this.host.call(command, connected);
    } finally {
      this.running -= 1;
      ended();
      if (this.abandoned && this.running === 0) this.free();
    }
  }
}

/** How long a host may take to say what its sockets carried. */
const STATS_WAIT_MS = 3_000;

const live: CallRole = () => "live";
const runsOn: CallRole = () => "running";
const follows: CallRole = () => undefined;

/** A prover living in an engine host. */
export class HostedProver extends HostedObject implements EngineProver {
  private verifierOnline = false;
  /** The notary session its setup dialled. */
  private notarySession: string | undefined;

  constructor(
    host: EngineHost,
    id: number,
    hangMs: number,
    events: HostedEvents,
    /** Set when its setup is a refill's that may be paused. */
    private readonly background: BackgroundWork | undefined,
    /** Told the notary session its setup dials. */
    private readonly onSetup: (notarySession: string | undefined) => void,
  ) {
    super(host, id, hangMs, events);
  }

  /**
   * Its session's Verifier has connected: both of the session's sockets are open. Before that a pause could
   * outlast the notary's deadline for the prover to connect, or the handshake of the Verifier's socket (a
   * Verifier paused while dialing failed with `CloseEvent 1006` once resumed).
   */
  verifierConnected(): void {
    this.verifierOnline = true;
    this.events.changed();
  }

  runningMs(): number {
    return performance.now() - this.host.pausedTime.ms();
  }

  async notarySocketStats(): Promise<EngineSocketStats[]> {
    if (!this.notarySession) return [];
    // Not a call of this prover's (it would count as one for placement and pausing); a paused host answers late.
    const reply = await untilAborted(this.host.call({ kind: "sockets", search: this.notarySession }), AbortSignal.timeout(STATS_WAIT_MS));
    return reply.sockets ?? [];
  }

  async setup(notarizeUrl: string): Promise<void> {
    // A notarize URL names its session: `…/notarize?sessionId=…`.
    this.notarySession = new URL(notarizeUrl).searchParams.get("sessionId") ?? undefined;
    this.onSetup(this.notarySession);
    const background = this.background;
    const role: CallRole = background ? () => this.refillRole(background) : runsOn;
    await this.call({ kind: "setup", prover: this.id, notarizeUrl }, role);
  }

  async sendRequest(tcpUrl: string, request: ExchangeRequest): Promise<EngineExchange> {
    const reply = await this.call({ kind: "send", prover: this.id, tcpUrl, request }, live);
    if (!reply.exchange) throw new Error("the engine host answered without the exchange");
    return reply.exchange;
  }

  async reveal(revealed: RevealedRanges): Promise<void> {
    await this.call({ kind: "reveal", prover: this.id, revealed }, live);
  }

  /** A refill's setup yields until a request waits for it, or it is given up (it must run on to end). */
  private refillRole(background: BackgroundWork): keyof HostCalls {
    return this.verifierOnline && !this.abandoned && !background.live ? "yielding" : "running";
  }
}

/** An embedded notary's Verifier living in an engine host. */
export class HostedVerifier extends HostedObject implements EngineVerifier {
  constructor(
    host: EngineHost,
    id: number,
    hangMs: number,
    events: HostedEvents,
    /** Told when the Verifier has connected to its prover. */
    private readonly onConnected = () => {},
  ) {
    super(host, id, hangMs, events);
  }

  async verify(peerUrl: string, connected: () => void): Promise<VerifierOutput> {
    const both = () => {
      this.onConnected();
      connected();
    };
    const reply = await this.call({ kind: "verify", verifier: this.id, peerUrl }, follows, both);
    if (!reply.verified) throw new Error("the engine host answered without the verification");
    return reply.verified;
  }
}
