import { AppError, errorText } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { SessionSizes } from "../../protocol/notary.ts";
import { sessionEngineBytes, verifierEngineBytes } from "../memory.ts";
import type { EngineExchange, EngineProver, EngineProvers, EngineRequest, RevealedRanges } from "../prover.ts";
import { EngineHost } from "./engine-host.ts";
import type { HostMemory } from "./protocol.ts";
import { type Engines, HOST_BUDGET_BYTES, placeSession } from "./placement.ts";

export interface EngineHostsOptions {
  count: number;
  /** The notary runs in the prover's own engine: it holds the verifier of every session, on every host. */
  embeddedNotary: boolean;
  threads: number;
  testTrustAnchorPem?: string;
  /** How long an abandoned engine call may still take to end before its host counts as hung and is replaced. */
  hangMs: number;
  log: Logger;
}

export interface EngineHostStatus {
  pid: number;
  /** Provers placed here and not freed. */
  sessions: number;
  /** Provers whose call never ended: their memory comes back when the host ends. */
  hung: number;
  reservedBytes: number;
  retiring: boolean;
  memory: HostMemory;
}

/** Wait before starting a host again after one failed to start. */
const RESTART_DELAY_MS = 5_000;

interface Placed {
  host: EngineHost;
  /** Live provers and the bytes each holds by the memory model. */
  live: Map<number, number>;
  hung: number;
  retiring: boolean;
  /** Calls running on its provers. */
  busy: number;
}

/** What a hosted prover tells its hosts: its calls, and its end. */
interface ProverEvents {
  calling(running: boolean): void;
  freed(): void;
  hung(): void;
}

/**
 * Engine hosts: child processes of this binary, each with its own wasm instance (one cannot pass 4 GiB).
 * Sessions go where there is room. A host with a hung call is retired: it takes no new session, a
 * replacement starts at once, and it is ended, freeing its memory, when its other sessions are over.
 * A host that dies is replaced; its sessions fail.
 */
export class EngineHosts implements EngineProvers {
  private readonly placed: Placed[] = [];
  private nextProver = 1;
  private stopped = false;
  /** Bytes the embedded notary's engine holds for the live sessions' verifiers, by the memory model. */
  private notaryReserved = 0;
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

  create(serverName: string, sizes: SessionSizes): EngineProver {
    const cost = sessionEngineBytes(sizes);
    const verifierCost = this.options.embeddedNotary ? verifierEngineBytes(sizes) : 0;
    if (this.notaryReserved + verifierCost > HOST_BUDGET_BYTES) {
      throw new AppError("over_capacity", "the embedded notary's engine has no room for another session of this size");
    }
    const index = placeSession(this.placed.map((p) => ({ reservedBytes: reserved(p), busy: p.busy, retiring: p.retiring })), cost);
    if (index === undefined) throw new AppError("over_capacity", "no engine host has room for another session of this size");
    const placed = this.placed[index]!;
    const id = this.nextProver++;
    placed.live.set(id, cost);
    this.notaryReserved += verifierCost;
    // The notary side is released with the session (freed, or given up as hung) whatever its host does.
    const releaseVerifier = () => (this.notaryReserved -= verifierCost);
    placed.host.post({ kind: "create", prover: id, serverName, sizes });
    return new HostedProver(placed.host, id, this.options.hangMs, {
      calling: (running) => (placed.busy += running ? 1 : -1),
      freed: () => {
        releaseVerifier();
        placed.live.delete(id);
        placed.host.post({ kind: "free", prover: id });
        this.endIfDrained(placed);
      },
      hung: () => {
        releaseVerifier();
        placed.live.delete(id);
        placed.hung += 1;
        this.retire(placed, "a call on it did not end");
      },
    });
  }

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

const reserved = (placed: Placed): number => [...placed.live.values()].reduce((sum, bytes) => sum + bytes, 0);

/** A prover living in an engine host. */
class HostedProver implements EngineProver {
  private running = 0;
  private ended = false;
  private abandoned = false;
  private hangTimer: Timer | undefined;

  constructor(
    private readonly host: EngineHost,
    private readonly id: number,
    private readonly hangMs: number,
    private readonly events: ProverEvents,
  ) {}

  async setup(notarizeUrl: string): Promise<void> {
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

  private async call(command: Parameters<EngineHost["call"]>[0]) {
    this.running += 1;
    this.events.calling(true);
    try {
      return await this.host.call(command);
    } finally {
      this.running -= 1;
      this.events.calling(false);
      if (this.abandoned && this.running === 0) this.free();
    }
  }
}
