import { BackgroundWork } from "../../../engine/background.ts";
import { runningTimeout } from "../../../engine/paused-time.ts";
import type { ProverSession } from "../../../engine/session.ts";
import { AppError, errorText } from "../../../core/errors.ts";
import type { Logger } from "../../../base/log.ts";
import type { SessionSizes } from "../../../core/session-sizes.ts";
import { untilAborted } from "../../../base/abort.ts";
import { type WarmTarget, backoffMs, fitsIn, maySetupAgain, mayRefill, nextRefill, refillDeadlineMs, rememberHost, warmTargets } from "./pool-policy.ts";
import { ReadySessions } from "./ready-sessions.ts";
import { type TurnGate, createTurnGate } from "./turn-gate.ts";
import { type SessionNeed, className } from "./size-classes.ts";

/** Where /proxy gets a set-up MPC session for a target. */
export interface SessionSource {
  /**
   * A session bound to `serverName` at least as big as `need.fits`: a warm one when ready (the smallest
   * that fits), else one set up with `need.setup` when its turn comes (`PoolOptions.concurrentSetups`). Rejects with
   * the signal's reason if it aborts while the request waits for its turn. An on-demand setup whose notary
   * socket dropped is run once more when `deadlineAt` (performance.now() time) leaves room for it (maySetupAgain).
   */
  acquire(serverName: string, need: SessionNeed, signal?: AbortSignal, deadlineAt?: number): Promise<ProverSession>;
  /** The size classes, smallest first. */
  classes: SessionSizes[];
  /** The class of endpoints never seen whose answer cannot be repeated; warm sessions of unseen hosts. */
  defaultClass: SessionSizes;
  /** The largest sizes a request may announce (the notary's limits). */
  limits: SessionSizes;
}

export interface WarmPool extends SessionSource {
  status(): PoolStatus;
  /** Keeps `count` sessions of `sizes` warm for `host` besides the automatic ones, until dropped; 0 unpins. */
  prepare(host: string, sizes: SessionSizes, count: number): void;
  /**
   * Forgets a host: its pins and learned class go and its ready sessions close (a PROVER_POOL_HOSTS host is
   * warmed again in the default class). Returns how many ready sessions closed.
   */
  drop(host: string): number;
  stop(): void;
}

export interface PoolOptions {
  /** Warm sessions kept automatically; 0 turns learning and automatic warming off (pinned ones still run). */
  size: number;
  /** The default class. */
  sizes: SessionSizes;
  classes: SessionSizes[];
  limits: SessionSizes;
  /** Hosts always kept warm, in priority order. */
  hosts: string[];
  /** How many recently served hosts to keep warm besides `hosts`; 0 turns learning off. */
  learnHosts: number;
  idleMs: number;
  /** How many sessions can each have the engine's thread count in cores: refills run beside fewer than this. */
  cpuSlots: number;
  /** Whether a refill's engine may be paused while a request's exchange runs: it then starts beside sessions in use. */
  refillsYield(): boolean;
  /**
   * Setups requests wait for (on demand, or a refill a request joined) run at once; further requests that found no
   * warm session wait for their turn.
   */
  concurrentSetups: number;
  /**
   * MPC setup with the notary (the slow part); given up with the signal's reason when it aborts. A refill's
   * setup is `background` work: the engine may pause it while live work runs.
   */
  setup(serverName: string, sizes: SessionSizes, signal?: AbortSignal, background?: BackgroundWork): Promise<ProverSession>;
  /** Longest a whole session may take: no setup may take longer (`refillDeadlineMs`). */
  sessionTimeoutMs: number;
  /** Closes a session that will make no proof and frees its notary side. */
  discard(session: ProverSession): void;
  /** Whether the notary answers now: a failed on-demand setup is run once more only then. */
  notaryReachable(): Promise<boolean>;
  /** Whether a ready session can still be used (its notary side may have gone while it idled). */
  isAlive(session: ProverSession): Promise<boolean>;
  /** Whether a ready session's engine runs beside a setup: of equal sizes, another is handed out first. */
  besideSetup(session: ProverSession): boolean;
  /**
   * Whether one more warm session of `sizes` fits in the engines beside what they hold, with room left for a
   * live session of the largest class: a request that finds no warm session must still get one.
   */
  hasRoom(sizes: SessionSizes): boolean;
  log: Logger;
}

export interface PoolStatus {
  size: number;
  /** The default class. */
  sizes: SessionSizes;
  classes: string[];
  idleS: number;
  ready: number;
  inUse: number;
  warming: number;
  /** Setups requests wait for (on demand, or a refill a request joined), and requests waiting for their turn to set one up. */
  setups: { running: number; waiting: number };
  /** What is kept warm, per (host, class). */
  hosts: { host: string; class: string; learned: boolean; pinned: boolean; share: number; ready: number; warming: number }[];
  /** How acquired sessions were obtained since start. */
  served: { ready: number; warming: number; onDemand: number };
  /** On-demand setups run a second time since start, after the first failed with its notary (its MPC socket dropped or stalled). */
  setupRetries: number;
  expired: number;
  failures: number;
  retryInMs: number;
  lastError: string | null;
}

interface WarmingJob {
  host: string;
  sizes: SessionSizes;
  session: Promise<ProverSession>;
  work: BackgroundWork;
  /** A request is waiting for this session: it goes to that request, not to the ready list. */
  claimed: boolean;
}

type Wanted = { host: string; sizes: SessionSizes; count: number };
const keyOf = (host: string, sizes: SessionSizes) => `${host} ${className(sizes)}`;

/**
 * A pool of sessions whose MPC setup is done, per (host, size class): a prover is bound to its server name
 * and its sizes before setup. Refills run one at a time, when `mayRefill` says the CPU has room and `hasRoom`
 * says the engines have. Failures
 * back off and never reach requests: those fall back to an on-demand setup.
 */
class SessionPool implements WarmPool {
  readonly classes: SessionSizes[];
  readonly defaultClass: SessionSizes;
  readonly limits: SessionSizes;
  private learned: string[] = [];
  /** The class each kept host's last request needed: its automatic warm sessions are of that class. */
  private readonly hostClass = new Map<string, SessionSizes>();
  private readonly pinned = new Map<string, Omit<WarmTarget, "pinned">>();
  private readonly ready: ReadySessions;
  private warming: WarmingJob | undefined;
  private readonly inUse = new Set<ProverSession>();
  /** Sessions set up on demand, from the request's arrival in the setup queue to the session's end. */
  private onDemandSessions = 0;
  private readonly setupGate: TurnGate;
  private readonly served = { ready: 0, warming: 0, onDemand: 0 };
  private setupRetries = 0;
  /** The slowest setup seen per class, in ms: a refill taking far longer has stalled. */
  private readonly slowestSetupMs = new Map<string, number>();
  private expired = 0;
  private failures = 0;
  private retryAt = 0;
  private retryTimer: Timer | undefined;
  private lastError: string | null = null;
  private stopped = false;
  private readonly log: Logger;
  private readonly pump = () => this.refill();

  constructor(private readonly options: PoolOptions) {
    this.classes = options.classes;
    this.defaultClass = options.sizes;
    this.limits = options.limits;
    this.log = options.log;
    this.setupGate = createTurnGate(options.concurrentSetups);
    this.ready = new ReadySessions(options.idleMs, (session) => {
      this.expired++;
      this.log.info("warm session idle too long: closed", { host: session.serverName, class: className(session.sizes) });
      options.discard(session);
      this.refill();
    });
    queueMicrotask(this.pump);
  }

  async acquire(serverName: string, need: SessionNeed, signal?: AbortSignal, deadlineAt?: number): Promise<ProverSession> {
    if (this.stopped) throw new AppError("shutting_down", "the prover is shutting down");
    this.remember(serverName, need.class);
    const take = () => this.ready.take(serverName, need.fits, this.options.besideSetup);
    for (let warm = take(); warm; warm = take()) {
      if (await this.options.isAlive(warm)) {
        this.served.ready++;
        return this.track(warm);
      }
      this.expired++;
      this.log.warn("warm session lost its notary side while idle: closed", { host: serverName });
      this.options.discard(warm);
    }
    // A setup already under way for this host finishes sooner than a second one competing with it.
    const job = this.warming;
    if (job && job.host === serverName && !job.claimed && fitsIn(need.fits, job.sizes)) {
      job.claimed = true;
      job.work.goLive();
      // A request waits for this setup now: on-demand setups after it wait for it, as for one of their own.
      const leave = this.setupGate.hold();
      try {
        const session = this.track(await job.session);
        this.served.warming++;
        return session;
      } catch {
        // The warming failed (and backs off); this request still gets its own attempt.
      } finally {
        leave();
      }
    }
    return this.onDemand(serverName, need.setup, signal, deadlineAt);
  }

  prepare(host: string, sizes: SessionSizes, count: number): void {
    if (count === 0) this.pinned.delete(keyOf(host, sizes));
    else this.pinned.set(keyOf(host, sizes), { host, sizes, count });
    this.log.info("warm sessions asked for", { host, class: className(sizes), count });
    queueMicrotask(this.pump);
  }

  drop(host: string): number {
    for (const [key, pin] of this.pinned) if (pin.host === host) this.pinned.delete(key);
    this.learned = this.learned.filter((h) => h !== host);
    this.hostClass.delete(host);
    const closed = this.ready.removeWhere((session) => session.serverName === host);
    for (const session of closed) this.options.discard(session);
    this.log.info("warm sessions dropped", { host, closed: closed.length });
    queueMicrotask(this.pump);
    return closed.length;
  }

  status(): PoolStatus {
    const pins = [...this.pinned.values()];
    const hosts = [...this.wanted().values()].map(({ host, sizes, count }) => ({
      host,
      class: className(sizes),
      learned: this.learned.includes(host),
      pinned: pins.some((p) => p.host === host && className(p.sizes) === className(sizes)),
      share: count,
      ready: this.ready.count(host, sizes),
      warming: this.warming && this.warming.host === host && className(this.warming.sizes) === className(sizes) ? 1 : 0,
    }));
    return {
      size: this.options.size,
      sizes: this.options.sizes,
      classes: this.classes.map(className),
      idleS: this.options.idleMs / 1000,
      ready: this.ready.size,
      inUse: this.inUse.size,
      warming: this.warming ? 1 : 0,
      setups: this.setupGate.status(),
      hosts,
      served: { ...this.served },
      setupRetries: this.setupRetries,
      expired: this.expired,
      failures: this.failures,
      retryInMs: this.retryTimer ? Math.max(0, this.retryAt - Date.now()) : 0,
      lastError: this.lastError,
    };
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    for (const session of this.ready.removeWhere(() => true)) this.options.discard(session);
  }

  /** Sessions wanted per host and class: a pinned and an automatic target of the same class add up. */
  private wanted(): Map<string, Wanted> {
    const all = [...this.options.hosts, ...this.learned];
    const targets = warmTargets(this.options.size, all, (host) => this.hostClass.get(host) ?? this.options.sizes, [...this.pinned.values()]);
    const byKey = new Map<string, Wanted>();
    for (const t of targets) {
      const entry = byKey.get(keyOf(t.host, t.sizes)) ?? { host: t.host, sizes: t.sizes, count: 0 };
      entry.count += t.count;
      byKey.set(keyOf(t.host, t.sizes), entry);
    }
    return byKey;
  }

  private remember(serverName: string, sizes: SessionSizes) {
    if (this.options.size === 0) return;
    this.learned = rememberHost(this.learned, serverName, this.options.hosts, this.options.learnHosts);
    const kept = new Set([...this.options.hosts, ...this.learned]);
    if (kept.has(serverName)) this.hostClass.set(serverName, sizes);
    for (const host of this.hostClass.keys()) if (!kept.has(host)) this.hostClass.delete(host);
  }

  private track(session: ProverSession, onEnd = () => {}): ProverSession {
    this.inUse.add(session);
    // The pool just got shorter; a refill may run beside this session (mayRefill decides).
    queueMicrotask(this.pump);
    session.onClose = () => {
      this.inUse.delete(session);
      onEnd();
      // Close handlers run inside the request's code path, which may go on with another session at once (a GET
      // repeated in a bigger class): refill after that code has run, not in the gap, in the class it outgrew.
      setTimeout(this.pump, 0);
    };
    return session;
  }

  /**
   * A session set up for this request when its turn comes; it counts as on demand from its arrival in the
   * queue until it closes (no refill runs beside it). A request abandoned during its setup gives its turn up at
   * once and its setup is given up; the engine's call, which cannot stop midway, still counts until it ends.
   */
  private async onDemand(serverName: string, sizes: SessionSizes, signal?: AbortSignal, deadlineAt?: number): Promise<ProverSession> {
    this.onDemandSessions++;
    // Without a session to hand out, the pool may refill at once; a session's close refills on its own terms (track).
    const ended = () => this.onDemandSessions--;
    const failed = () => {
      ended();
      queueMicrotask(this.pump);
    };
    let leave: () => void;
    try {
      leave = await this.setupGate.enter(signal);
    } catch (error) {
      failed();
      throw error;
    }
    // A retry keeps the turn: it is the same request's setup.
    const setup = this.setupOnDemand(serverName, sizes, signal, deadlineAt);
    setup.then(
      (session) => {
        leave();
        if (signal?.aborted) {
          this.options.discard(session);
          failed();
        }
      },
      () => {
        leave();
        failed();
      },
    );
    let session: ProverSession;
    try {
      session = await untilAborted(setup, signal);
    } catch (error) {
      if (signal?.aborted) leave();
      throw error;
    }
    this.served.onDemand++;
    return this.track(session, ended);
  }

  /**
   * An on-demand setup, run once more when the first failed with its notary (its MPC socket dropped or stalled) and `maySetupAgain` allows it
   * (measured under load: BENCHMARKS.md, "Notary sockets under load").
   */
  private async setupOnDemand(serverName: string, sizes: SessionSizes, signal?: AbortSignal, deadlineAt?: number): Promise<ProverSession> {
    const started = performance.now();
    try {
      return await this.timed(sizes, this.options.setup(serverName, sizes, signal));
    } catch (error) {
      const state = () => ({
        attempts: 1,
        stopped: this.stopped,
        abandoned: signal?.aborted ?? false,
        remainingMs: deadlineAt === undefined ? undefined : deadlineAt - performance.now(),
        slowestSetupMs: this.slowestSetupMs.get(className(sizes)),
      });
      // Asked again after the notary's answer: the request may have been abandoned, or the prover stopped, meanwhile.
      if (!maySetupAgain(error, state()) || !(await this.options.notaryReachable()) || !maySetupAgain(error, state())) throw error;
      this.setupRetries++;
      this.log.warn("an on-demand setup failed with its notary (its MPC socket dropped or stalled); setting it up once more", {
        host: serverName,
        class: className(sizes),
        afterMs: Math.round(performance.now() - started),
        error: errorText(error),
      });
      return await this.timed(sizes, this.options.setup(serverName, sizes, signal));
    }
  }

  /** Starts the next refill when the pool is short and the CPU has room for it. */
  private refill() {
    if (this.stopped || this.retryTimer) return;
    const load = {
      onDemand: this.onDemandSessions,
      inUse: this.inUse.size,
      warming: this.warming ? 1 : 0,
      cpuSlots: this.options.cpuSlots,
      refillsYield: this.options.refillsYield(),
    };
    if (!mayRefill(load)) return;
    const want = this.wanted();
    // Sessions no target wants any more (a newer host took the slot, a host's class changed) are closed.
    const surplus = this.ready.removeWhere(
      (s) => this.ready.count(s.serverName, s.sizes) > (want.get(keyOf(s.serverName, s.sizes))?.count ?? 0),
    );
    for (const session of surplus) this.options.discard(session);
    const short = nextRefill([...want.values()], (w) => this.ready.count(w.host, w.sizes), (w) => this.options.hasRoom(w.sizes));
    if (short) this.startWarming(short.host, short.sizes);
  }

  /** Records how long a setup that succeeded ran (time paused for live work not counted), per class. */
  private timed(sizes: SessionSizes, setup: Promise<ProverSession>, work?: BackgroundWork): Promise<ProverSession> {
    const started = performance.now();
    void setup.then(
      () => {
        const ms = performance.now() - started - (work?.pausedMs() ?? 0);
        const key = className(sizes);
        this.slowestSetupMs.set(key, Math.max(ms, this.slowestSetupMs.get(key) ?? 0));
      },
      () => {},
    );
    return setup;
  }

  /**
   * A refill's setup, given up once it has run longer than `refillDeadlineMs` for its class. Time it spent
   * paused for live work does not count: a paused setup cannot progress.
   */
  private deadlineSetup(host: string, sizes: SessionSizes, work: BackgroundWork): Promise<ProverSession> {
    const deadlineMs = Math.round(refillDeadlineMs(this.slowestSetupMs.get(className(sizes)), this.options.sessionTimeoutMs));
    const deadline = new AbortController();
    const cancel = runningTimeout(
      () => work.pausedMs(),
      deadlineMs,
      () => deadline.abort(new AppError("session_timeout", `warming a ${className(sizes)} session took longer than ${deadlineMs} ms: given up as stalled`)),
    );
    const setup = this.timed(sizes, this.options.setup(host, sizes, deadline.signal, work), work);
    void setup.finally(cancel).catch(() => {});
    return setup;
  }

  private startWarming(host: string, sizes: SessionSizes) {
    const work = new BackgroundWork([...this.inUse].map((session) => session.engine));
    const job: WarmingJob = { host, sizes, work, claimed: false, session: this.deadlineSetup(host, sizes, work) };
    this.warming = job;
    job.session.then(
      (session) => {
        this.warming = undefined;
        this.failures = 0;
        this.lastError = null;
        if (job.claimed) return;
        if (this.stopped) return this.options.discard(session);
        this.ready.add(session);
        this.log.info("warm session ready", { host, class: className(sizes), ready: this.ready.size });
        this.refill();
      },
      (error: unknown) => {
        this.warming = undefined;
        // Shutting down ends the engine hosts under a running setup: not a failure to retry.
        if (this.stopped) return;
        this.failures++;
        this.lastError = errorText(error);
        const wait = backoffMs(this.failures);
        this.retryAt = Date.now() + wait;
        this.log.warn("warming a session failed; retrying later", { host, failures: this.failures, retryInMs: wait, error: this.lastError });
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.refill();
        }, wait);
      },
    );
  }
}

export const createWarmPool = (options: PoolOptions): WarmPool => new SessionPool(options);
