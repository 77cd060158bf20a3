import { AppError, errorText } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import type { BackgroundWork } from "../background.ts";
import { sideEngineBytes } from "../memory.ts";
import type { EngineProver, EngineProvers } from "../prover.ts";
import type { EngineVerifiers } from "../verifier.ts";
import { EngineHost } from "./engine-host.ts";
import { EngineLog } from "./engine-log.ts";
import { type CallRole, type HostedEvents, HostedProver, HostedVerifier } from "./hosted-objects.ts";
import type { HostMemory } from "./protocol.ts";
import { type Engines, type HostCalls, type HostRoom, fitsBeside, hostsToPause, placeSession, sessionCost } from "./placement.ts";

export interface EngineHostsOptions {
  count: number;
  /** The prover's embedded notary places its Verifiers here too: every session then has both sides in the hosts. */
  embeddedNotary: boolean;
  threads: number;
  testTrustAnchorPem?: string;
  /** How long an abandoned engine call may still take to end before its host counts as hung and is replaced. */
  hangMs: number;
  /** With an embedded notary: hosts running only refills are paused while an exchange runs in another. */
  pauseRefills: boolean;
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
  /** Stopped while live work runs in another host: it runs only refills that yield. */
  paused: boolean;
  /** Time spent paused since it started. */
  pausedMs: number;
  /** The kernel ends it with the prover, even paused; a host without this is never paused. */
  diesWithParent: boolean;
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
  /** Calls running on its objects, each with what it counts as for pausing. */
  calls: Set<{ role: CallRole }>;
}

/**
 * Engine hosts: child processes of this binary, each with its own wasm instance (one cannot pass 4 GiB), all
 * started with the first session placed (a prover that proves only in proxy mode runs none). Provers, and an
 * embedded notary's Verifiers, go where there is room. A host with a hung call is retired: it takes nothing new,
 * a replacement starts at once, and it is ended, freeing its memory, when its other objects are gone. A host that
 * dies is replaced; its sessions fail.
 *
 * With an embedded notary both sides of a session live in one host, so a host that runs only refills can be
 * paused as a whole while a request's exchange runs in another (`hostsToPause`): the refill then takes no cores
 * from it.
 */
export class EngineHosts implements EngineProvers {
  private readonly placed: Placed[] = [];
  private nextId = 1;
  /** Hosts start with the first session placed: a prover that proves only in proxy mode runs none. */
  private launched = false;
  private stopped = false;
  /** With an embedded notary: each notary session's prover and its host, where its Verifier goes. */
  private readonly sessionHosts = new Map<string, { placed: Placed; prover: HostedProver }>();
  /** Hosts replaced since start: retired because a call on them hung, or because they died. */
  readonly replaced = { hung: 0, died: 0 };
  /** What the hosts print, into the log. */
  private readonly engineLog: EngineLog;

  constructor(private readonly options: EngineHostsOptions) {
    this.engineLog = new EngineLog(options.log);
  }

  /** The engines sessions are placed in. */
  get engines(): Engines {
    return { hosts: this.options.count, embeddedNotary: this.options.embeddedNotary };
  }

  /** Starts the hosts, if no session has yet, and waits until each has answered its start. */
  async started(): Promise<void> {
    this.launchAll();
    await Promise.all(this.placed.map((p) => p.host.started));
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
   * which the notary places there when its side starts: both sides of a session share one engine. A
   * `background` prover's setup may be paused (see the class).
   */
  create(serverName: string, sizes: SessionSizes, background?: BackgroundWork): EngineProver {
    const { placed, id } = this.place(sessionCost(this.engines, sizes), background?.apartFrom);
    placed.host.post({ kind: "create", prover: id, serverName, sizes });
    let notarySession: string | undefined;
    const events = this.events(placed, id, () => notarySession && this.sessionHosts.delete(notarySession));
    // Only with both sides in the host: a remote notary's Verifier would wait on a stopped prover, its deadlines running.
    const yielding = this.pausing ? background : undefined;
    yielding?.runsOn(placed.host.pausedTime, events.changed);
    const prover: HostedProver = new HostedProver(placed.host, id, this.options.hangMs, events, yielding, (session) => {
      // Only an embedded notary's Verifier looks its prover's host up; a remote notary's session is not ours to place.
      if (!this.options.embeddedNotary || !session) return;
      notarySession = session;
      this.sessionHosts.set(session, { placed, prover });
    });
    return prover;
  }

  /**
   * The embedded notary's Verifiers, each in its prover's host, in the room the prover holds for it. One whose
   * prover is unknown or gone (a session the prover gave up) is placed like a prover, at its own cost.
   */
  readonly verifiers: EngineVerifiers = {
    create: (sizes, notarySession) => {
      const withProver = this.sessionHosts.get(notarySession);
      const beside = withProver && !withProver.placed.retiring;
      const { placed, id } = beside ? this.reserve(withProver.placed, 0) : this.place(sideEngineBytes(sizes));
      placed.host.post({ kind: "create-verifier", verifier: id, sizes });
      const connected = beside ? () => withProver.prover.verifierConnected() : undefined;
      return new HostedVerifier(placed.host, id, this.options.hangMs, this.events(placed, id), connected);
    },
  };

  /**
   * Whether `prover` lives in a host where a setup runs (a refill's or an on-demand one): a live call on it would
   * share that engine's threads with the setup and keep a refill there from being paused, so the pool hands out
   * a ready session from another host first.
   */
  besideSetup(prover: EngineProver): boolean {
    if (!this.pausing || !(prover instanceof HostedProver)) return false;
    const placed = this.placed.find((p) => p.host === prover.host);
    const calls = placed ? callsOf(placed) : undefined;
    return Boolean(calls && calls.yielding + calls.running > 0);
  }

  status(): EngineHostStatus[] {
    return this.placed.map((p) => ({
      pid: p.host.pid,
      sessions: p.live.size,
      hung: p.hung,
      reservedBytes: reserved(p),
      retiring: p.retiring,
      paused: p.host.pausedTime.paused,
      pausedMs: Math.round(p.host.pausedTime.ms()),
      diesWithParent: p.host.diesWithParent,
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

  /**
   * Reserves `cost` bytes in the host placeSession chooses; a host holding one of `apartFrom` counts as busy
   * once more for each.
   */
  private place(cost: number, apartFrom: readonly object[] = []): { placed: Placed; id: number } {
    this.launchAll();
    const rooms = this.rooms().map((room, i) => {
      const host = this.placed[i]!.host;
      const held = apartFrom.filter((prover) => prover instanceof HostedProver && prover.host === host).length;
      return { ...room, busy: room.busy + held };
    });
    const index = placeSession(rooms, cost);
    if (rooms.length === 0) throw new AppError("over_capacity", "no engine host is running: one is being started again");
    if (index === undefined) throw new AppError("over_capacity", "no engine host has room for another session of this size");
    return this.reserve(this.placed[index]!, cost);
  }

  private reserve(placed: Placed, cost: number): { placed: Placed; id: number } {
    const id = this.nextId++;
    placed.live.set(id, cost);
    return { placed, id };
  }

  private rooms(): HostRoom[] {
    if (!this.launched) return Array.from({ length: this.options.count }, () => ({ reservedBytes: 0, busy: 0, retiring: false }));
    return this.placed.map((p) => ({ reservedBytes: reserved(p), busy: p.calls.size, retiring: p.retiring }));
  }

  /** Whether hosts may be paused: with an embedded notary (both sides of a session in one host) and more than one host. */
  private get pausing(): boolean {
    return this.options.pauseRefills && this.options.embeddedNotary && this.options.count > 1;
  }

  /** Whether a refill's host is paused while a request's exchange or reveal runs in another: every host can be. */
  get refillsYield(): boolean {
    return this.pausing && this.placed.every((p) => p.host.diesWithParent);
  }

  /** Pauses and resumes hosts as `hostsToPause` says for the calls running now. */
  private repause() {
    if (!this.pausing) return;
    const pause = hostsToPause(this.placed.map(callsOf));
    for (const [index, placed] of this.placed.entries()) {
      if (pause[index]) placed.host.pause();
      else placed.host.resume();
    }
  }

  private events(placed: Placed, id: number, ended = () => {}): HostedEvents {
    return {
      calling: (role) => {
        const call = { role };
        placed.calls.add(call);
        this.repause();
        return () => {
          placed.calls.delete(call);
          this.repause();
        };
      },
      changed: () => this.repause(),
      freed: () => {
        this.engineLog.released();
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
      this.launch();
    }
    this.endIfDrained(placed);
  }

  /** A retired host is ended once no live session is left on it: its memory comes back with it. */
  private endIfDrained(placed: Placed) {
    if (!placed.retiring || placed.live.size > 0) return;
    this.options.log.info("engine host ended", { pid: placed.host.pid, hung: placed.hung });
    placed.host.kill();
  }

  private launchAll() {
    if (this.launched) return;
    this.launched = true;
    for (let i = 0; i < this.options.count; i++) this.launch();
  }

  /** Starts one host; its sessions may be placed at once. One that does not start is started again later (exited). */
  private launch(): void {
    if (this.stopped) return;
    let host: EngineHost;
    try {
      host = new EngineHost({
        threads: this.options.threads,
        testTrustAnchorPem: this.options.testTrustAnchorPem,
        onExit: (ended, how) => this.exited(ended, how),
        onOutput: (pid, line) => this.engineLog.forward(pid, line),
      });
    } catch (error) {
      return this.launchLater(errorText(error));
    }
    this.placed.push({ host, live: new Map(), hung: 0, retiring: false, calls: new Set() });
    host.started.then(
      () => this.options.log.info("engine host started", { pid: host.pid, hosts: this.placed.length, diesWithParent: host.diesWithParent }),
      // It is killed: exited() starts another.
      () => {},
    );
  }

  private launchLater(error: string) {
    this.options.log.error("an engine host did not start; trying again", { error, inMs: RESTART_DELAY_MS });
    setTimeout(() => this.launch(), RESTART_DELAY_MS);
  }

  private exited(host: EngineHost, how: string) {
    const index = this.placed.findIndex((p) => p.host === host);
    if (index < 0) return;
    const [placed] = this.placed.splice(index, 1);
    if (this.stopped || placed!.retiring) return;
    // Its running calls have failed with "the engine host stopped"; the sessions' owners explain that. One that
    // never answered its start is started again after a pause: a host that cannot start would otherwise loop.
    if (!host.running) return this.launchLater(how);
    this.replaced.died += 1;
    this.options.log.error("engine host stopped unexpectedly; replacing it", { pid: host.pid, how, sessionsLost: placed!.live.size });
    this.launch();
  }
}

const reserved = (placed: Placed): number => [...placed.live.values()].reduce((sum, bytes) => sum + bytes, 0);

function callsOf(placed: Placed): HostCalls {
  const calls: HostCalls = { live: 0, yielding: 0, running: 0 };
  for (const { role } of placed.calls) {
    const counted = role();
    if (counted) calls[counted] += 1;
  }
  return calls;
}
