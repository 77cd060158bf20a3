import { AppError, errorText } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { SessionSizes } from "../../protocol/notary.ts";
import { sideEngineBytes } from "../memory.ts";
import type { EngineExchange, EngineProver, EngineProvers, EngineRequest, RevealedRanges } from "../prover.ts";
import type { EngineVerifier, EngineVerifiers, VerifierOutput } from "../verifier.ts";
import { EngineHost } from "./engine-host.ts";
import type { HostMemory } from "./protocol.ts";
import { type Engines, type HostRoom, fitsBeside, placeSession, sessionCost } from "./placement.ts";

export interface EngineHostsOptions {
  count: number;
  /** The prover's embedded notary places its Verifiers here too: every session then has both sides in the hosts. */
  embeddedNotary: boolean;
  threads: number;
  testTrustAnchorPem?: string;
  /** How long an abandoned engine call may still take to end before its host counts as hung and is replaced. */
  hangMs: number;
  log: Logger;
}

export interface EngineHostStatus {
  pid: number;
  /** Provers and Verifiers placed here and not freed. */
  sessions: number;
  /** Objects whose call never ended: their memory comes back when the host ends. */
  hung: number;
  reservedBytes: number;
  retiring: boolean;
  memory: HostMemory;
}

/** Wait before starting a host again after one failed to start. */
const RESTART_DELAY_MS = 5_000;

interface Placed {
  host: EngineHost;
  /** Live provers and Verifiers, and the bytes each holds by the memory model. */
  live: Map<number, number>;
  hung: number;
  retiring: boolean;
  /** Calls running on its objects. */
  busy: number;
}

/** What a hosted object tells its hosts: its calls, and its end. */
interface HostedEvents {
  calling(running: boolean): void;
  freed(): void;
  hung(): void;
}

/**
 * Engine hosts: child processes of this binary, each with its own wasm instance (one cannot pass 4 GiB).
 * Provers, and an embedded notary's Verifiers, go where there is room. A host with a hung call is retired: it
 * takes nothing new, a replacement starts at once, and it is ended, freeing its memory, when its other objects
 * are gone. A host that dies is replaced; its sessions fail.
 */
export class EngineHosts implements EngineProvers {
  private readonly placed: Placed[] = [];
  private nextId = 1;
  private stopped = false;
  /** With an embedded notary: the host of each notary session's prover, where its Verifier goes. */
  private readonly sessionHosts = new Map<string, Placed>();
  /** Hosts replaced since start: retired because a call on them hung, or because they died. */
  readonly replaced = { hung: 0, died: 0 };

  private constructor(private readonly options: EngineHostsOptions) {}

  /** The engines sessions are placed in. */
  get engines(): Engines {
    return { hosts: this.options.count, embeddedNotary: this.options.embeddedNotary };
  }

  static async start(options: EngineHostsOptions): Promise<EngineHosts> {
    const hosts = new EngineHosts(options);
    await Promise.all(Array.from({ length: options.count }, () => hosts.launch(false)));
    return hosts;
  }

  /**
   * Whether sessions of `sizes` fit in the hosts beside what they hold now. The warm pool asks this before a
   * refill, with room kept for a live session of the largest class.
   */
  fitsBeside(sizes: readonly SessionSizes[]): boolean {
    return fitsBeside(this.rooms(), sizes.map((s) => sessionCost(this.engines, s)));
  }

  /**
   * A prover for a new session. With an embedded notary its host also holds room for the session's Verifier,
   * which the notary places there when its side starts: both sides of a session share one engine.
   */
  create(serverName: string, sizes: SessionSizes): EngineProver {
    const { placed, id } = this.place(sessionCost(this.engines, sizes));
    placed.host.post({ kind: "create", prover: id, serverName, sizes });
    let notarySession: string | undefined;
    const events = this.events(placed, id, () => notarySession && this.sessionHosts.delete(notarySession));
    return new HostedProver(placed.host, id, this.options.hangMs, events, (notarizeUrl) => {
      // Only an embedded notary's Verifier looks its prover's host up; a remote notary's session is not ours to place.
      if (!this.options.embeddedNotary) return;
      notarySession = notarySessionOf(notarizeUrl);
      if (notarySession) this.sessionHosts.set(notarySession, placed);
    });
  }

  /**
   * The embedded notary's Verifiers, each in its prover's host, in the room the prover holds for it. One whose
   * prover is unknown or gone (a session the prover gave up) is placed like a prover, at its own cost.
   */
  readonly verifiers: EngineVerifiers = {
    create: (sizes, notarySession) => {
      const withProver = this.sessionHosts.get(notarySession);
      const { placed, id } = withProver && !withProver.retiring ? this.reserve(withProver, 0) : this.place(sideEngineBytes(sizes));
      placed.host.post({ kind: "create-verifier", verifier: id, sizes });
      return new HostedVerifier(placed.host, id, this.options.hangMs, this.events(placed, id));
    },
  };

  status(): EngineHostStatus[] {
    return this.placed.map((p) => ({
      pid: p.host.pid,
      sessions: p.live.size,
      hung: p.hung,
      reservedBytes: reserved(p),
      retiring: p.retiring,
      memory: p.host.memory,
    }));
  }

  /** Engine memory of every host, summed. */
  engineBytes(): number {
    return this.placed.reduce((sum, p) => sum + p.host.memory.engineBytes, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const hosts = this.placed.map((p) => p.host);
    for (const host of hosts) host.kill();
    await Promise.all(hosts.map((host) => host.exited()));
  }

  /** Reserves `cost` bytes in the host placeSession chooses. */
  private place(cost: number): { placed: Placed; id: number } {
    const index = placeSession(this.rooms(), cost);
    if (index === undefined) throw new AppError("over_capacity", "no engine host has room for another session of this size");
    return this.reserve(this.placed[index]!, cost);
  }

  private reserve(placed: Placed, cost: number): { placed: Placed; id: number } {
    const id = this.nextId++;
    placed.live.set(id, cost);
    return { placed, id };
  }

  private rooms(): HostRoom[] {
    return this.placed.map((p) => ({ reservedBytes: reserved(p), busy: p.busy, retiring: p.retiring }));
  }

  private events(placed: Placed, id: number, ended = () => {}): HostedEvents {
    return {
      calling: (running) => (placed.busy += running ? 1 : -1),
      freed: () => {
        ended();
        placed.live.delete(id);
        placed.host.post({ kind: "free", id });
        this.endIfDrained(placed);
      },
      hung: () => {
        ended();
        placed.live.delete(id);
        placed.hung += 1;
        this.retire(placed, "a call on it did not end");
      },
    };
  }

  private retire(placed: Placed, reason: string) {
    if (!placed.retiring) {
      placed.retiring = true;
      this.replaced.hung += 1;
      this.options.log.warn("engine host retired; starting a replacement", { pid: placed.host.pid, reason, sessionsLeft: placed.live.size });
      void this.launch(true);
    }
    this.endIfDrained(placed);
  }

  /** A retired host is ended once no live session is left on it: its memory comes back with it. */
  private endIfDrained(placed: Placed) {
    if (!placed.retiring || placed.live.size > 0) return;
    this.options.log.info("engine host ended", { pid: placed.host.pid, hung: placed.hung });
    placed.host.kill();
  }

  private async launch(retry: boolean): Promise<void> {
    if (this.stopped) return;
    try {
      const host = await EngineHost.start({
        threads: this.options.threads,
        testTrustAnchorPem: this.options.testTrustAnchorPem,
        onExit: (ended, how) => this.exited(ended, how),
      });
      if (this.stopped) return host.kill();
      this.placed.push({ host, live: new Map(), hung: 0, retiring: false, busy: 0 });
      this.options.log.info("engine host started", { pid: host.pid, hosts: this.placed.length });
    } catch (error) {
      if (!retry) throw new AppError("internal", `an engine host did not start: ${errorText(error)}`);
      this.options.log.error("an engine host did not start; trying again", { error: errorText(error), inMs: RESTART_DELAY_MS });
      setTimeout(() => void this.launch(true), RESTART_DELAY_MS);
    }
  }

  private exited(host: EngineHost, how: string) {
    const index = this.placed.findIndex((p) => p.host === host);
    if (index < 0) return;
    const [placed] = this.placed.splice(index, 1);
    if (this.stopped || placed!.retiring) return;
    // Its running calls have failed with "the engine host stopped"; the sessions' owners explain that.
    this.replaced.died += 1;
    this.options.log.error("engine host stopped unexpectedly; replacing it", { pid: host.pid, how, sessionsLost: placed!.live.size });
    void this.launch(true);
  }
}

/** The notary session a notarize URL names (`…/notarize?sessionId=…`). */
const notarySessionOf = (notarizeUrl: string): string | undefined => new URL(notarizeUrl).searchParams.get("sessionId") ?? undefined;

const reserved = (placed: Placed): number => [...placed.live.values()].reduce((sum, bytes) => sum + bytes, 0);

/** A wasm object living in an engine host: its calls, its end, and a call that never ends. */
class HostedObject {
  private running = 0;
  private ended = false;
  private abandoned = false;
  private hangTimer: Timer | undefined;

  constructor(
    private readonly host: EngineHost,
    protected readonly id: number,
    private readonly hangMs: number,
    private readonly events: HostedEvents,
  ) {}

  free(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.hangTimer);
    this.events.freed();
  }

  /** Nothing runs: freed now. A call runs: it gets `hangMs` to end, else the host counts it as hung. */
  abandon(): void {
    if (this.ended || this.abandoned) return;
    this.abandoned = true;
    if (this.running === 0) return this.free();
    this.hangTimer = setTimeout(() => {
      if (this.ended) return;
      this.ended = true;
      this.events.hung();
    }, this.hangMs);
  }

  protected async call(command: Parameters<EngineHost["call"]>[0], connected?: () => void) {
    this.running += 1;
    this.events.calling(true);
    try {
      return await this.host.call(command, connected);
    } finally {
      this.running -= 1;
      this.events.calling(false);
      if (this.abandoned && this.running === 0) this.free();
    }
  }
}

/** A prover living in an engine host. */
class HostedProver extends HostedObject implements EngineProver {
  constructor(host: EngineHost, id: number, hangMs: number, events: HostedEvents, private readonly onSetup: (notarizeUrl: string) => void) {
    super(host, id, hangMs, events);
  }

  async setup(notarizeUrl: string): Promise<void> {
    this.onSetup(notarizeUrl);
    await this.call({ kind: "setup", prover: this.id, notarizeUrl });
  }

  async sendRequest(tcpUrl: string, request: EngineRequest): Promise<EngineExchange> {
    const reply = await this.call({ kind: "send", prover: this.id, tcpUrl, request });
    if (!reply.exchange) throw new Error("the engine host answered without the exchange");
    return reply.exchange;
  }

  async reveal(revealed: RevealedRanges): Promise<void> {
    await this.call({ kind: "reveal", prover: this.id, revealed });
  }
}

/** An embedded notary's Verifier living in an engine host. */
class HostedVerifier extends HostedObject implements EngineVerifier {
  async verify(peerUrl: string, connected: () => void): Promise<VerifierOutput> {
    const reply = await this.call({ kind: "verify", verifier: this.id, peerUrl }, connected);
    if (!reply.verified) throw new Error("the engine host answered without the verification");
    return reply.verified;
  }
}
