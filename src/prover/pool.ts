import type { ProverSession } from "../engine/session.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SessionSizes } from "../protocol/notary.ts";
import { type WarmTarget, backoffMs, fitsIn, mayRefill, rememberHost, warmTargets } from "./pool-policy.ts";
import { type SessionNeed, className } from "./size-classes.ts";

/** Where /proxy gets a set-up MPC session for a target. */
export interface SessionSource {
  /**
   * A session bound to `serverName` at least as big as `need.fits`: a warm one when ready (the smallest
   * that fits), else one set up now with `need.setup`.
   */
  acquire(serverName: string, need: SessionNeed): Promise<ProverSession>;
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
  /** CPU cores the engine may use: refills run beside at most this many sessions past their setup. */
  cpuSlots: number;
  /** MPC setup with the notary (the slow part). */
  setup(serverName: string, sizes: SessionSizes): Promise<ProverSession>;
  /** Closes a session that will make no proof and frees its notary side. */
  discard(session: ProverSession): void;
  /** Whether a ready session can still be used (its notary side may have gone while it idled). */
  isAlive(session: ProverSession): Promise<boolean>;
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
  /** What is kept warm, per (host, class). */
  hosts: { host: string; class: string; learned: boolean; pinned: boolean; share: number; ready: number; warming: number }[];
  /** How acquired sessions were obtained since start. */
  served: { ready: number; warming: number; onDemand: number };
  expired: number;
  failures: number;
  retryInMs: number;
  lastError: string | null;
}

interface ReadySession {
  session: ProverSession;
  idleTimer: Timer;
}

interface WarmingJob {
  host: string;
  sizes: SessionSizes;
  session: Promise<ProverSession>;
  /** A request is waiting for this session: it goes to that request, not to the ready list. */
  claimed: boolean;
}

const sameClass = (a: SessionSizes, b: SessionSizes) => className(a) === className(b);
const bySize = (a: ReadySession, b: ReadySession) =>
  a.session.sizes.maxRecvData - b.session.sizes.maxRecvData || a.session.sizes.maxSentData - b.session.sizes.maxSentData;

/**
 * A pool of sessions whose MPC setup is done, per (host, size class): a prover is bound to its server name
 * and its sizes before setup. Refills run one at a time, when `mayRefill` says the CPU has room. Failures
 * back off and never reach requests: those fall back to an on-demand setup.
 */
export function createWarmPool(options: PoolOptions): WarmPool {
  const { log } = options;
  let learned: string[] = [];
  /** The class each kept host's last request needed: its automatic warm sessions are of that class. */
  const hostClass = new Map<string, SessionSizes>();
  const pinned = new Map<string, Omit<WarmTarget, "pinned">>();
  const ready: ReadySession[] = [];
  let warming: WarmingJob | undefined;
  const inUse = new Set<ProverSession>();
  let onDemandSetups = 0;
  const served = { ready: 0, warming: 0, onDemand: 0 };
  let expired = 0;
  let failures = 0;
  let retryAt = 0;
  let retryTimer: Timer | undefined;
  let lastError: string | null = null;
  let stopped = false;

  const targets = () =>
    warmTargets(options.size, [...options.hosts, ...learned], (host) => hostClass.get(host) ?? options.sizes, [...pinned.values()]);
  const readyOf = (host: string, sizes: SessionSizes) =>
    ready.filter((r) => r.session.serverName === host && sameClass(r.session.sizes, sizes)).length;
  const warmingOf = (host: string, sizes: SessionSizes) => (warming && warming.host === host && sameClass(warming.sizes, sizes) ? 1 : 0);
  /** Sessions wanted per host and class: a pinned and an automatic target of the same class add up. */
  function wanted(): Map<string, { host: string; sizes: SessionSizes; count: number }> {
    const byKey = new Map<string, { host: string; sizes: SessionSizes; count: number }>();
    for (const t of targets()) {
      const key = `${t.host} ${className(t.sizes)}`;
      const entry = byKey.get(key) ?? { host: t.host, sizes: t.sizes, count: 0 };
      entry.count += t.count;
      byKey.set(key, entry);
    }
    return byKey;
  }

  function track(session: ProverSession): ProverSession {
    inUse.add(session);
    // The pool just got shorter; a refill may run beside this session (mayRefill decides).
    queueMicrotask(pump);
    session.onClose = () => {
      inUse.delete(session);
      // Close handlers run inside the request's code path; refill after it has moved on.
      queueMicrotask(pump);
    };
    return session;
  }

  /** The smallest ready session for `host` that carries `fits`. */
  function takeReady(host: string, fits: SessionSizes): ProverSession | undefined {
    const entry = ready.filter((r) => r.session.serverName === host && fitsIn(fits, r.session.sizes)).sort(bySize)[0];
    if (!entry) return undefined;
    ready.splice(ready.indexOf(entry), 1);
    clearTimeout(entry.idleTimer);
    return entry.session;
  }

  function close(entry: ReadySession) {
    clearTimeout(entry.idleTimer);
    ready.splice(ready.indexOf(entry), 1);
    options.discard(entry.session);
  }

  function expire(entry: ReadySession) {
    if (!ready.includes(entry)) return;
    close(entry);
    expired++;
    log.info("warm session idle too long: closed", { host: entry.session.serverName, class: className(entry.session.sizes) });
    pump();
  }

  function addReady(session: ProverSession) {
    const entry: ReadySession = { session, idleTimer: setTimeout(() => expire(entry), options.idleMs) };
    ready.push(entry);
  }

  /** Closes ready sessions no target wants any more (a newer host took the slot, a host's class changed). */
  function evictSurplus(want: Map<string, { count: number }>) {
    for (const entry of [...ready]) {
      const { serverName, sizes } = entry.session;
      if (readyOf(serverName, sizes) > (want.get(`${serverName} ${className(sizes)}`)?.count ?? 0)) close(entry);
    }
  }

  function startWarming(host: string, sizes: SessionSizes) {
    const job: WarmingJob = { host, sizes, claimed: false, session: options.setup(host, sizes) };
    warming = job;
    job.session.then(
      (session) => {
        warming = undefined;
        failures = 0;
        lastError = null;
        if (job.claimed) return;
        if (stopped) return options.discard(session);
        addReady(session);
        log.info("warm session ready", { host, class: className(sizes), ready: ready.length });
        pump();
      },
      (error: unknown) => {
        warming = undefined;
        failures++;
        lastError = String((error as Error)?.message ?? error);
        const wait = backoffMs(failures);
        retryAt = Date.now() + wait;
        log.warn("warming a session failed; retrying later", { host, failures, retryInMs: wait, error: lastError });
        retryTimer = setTimeout(() => {
          retryTimer = undefined;
          pump();
        }, wait);
      },
    );
  }

  /** Starts the next refill when the pool is short and the CPU has room for it. */
  function pump() {
    if (stopped || retryTimer) return;
    if (!mayRefill({ setups: onDemandSetups, inUse: inUse.size, warming: warming ? 1 : 0, cpuSlots: options.cpuSlots })) return;
    const want = wanted();
    evictSurplus(want);
    const short = [...want.values()].find((w) => readyOf(w.host, w.sizes) < w.count);
    if (short) startWarming(short.host, short.sizes);
  }

  async function onDemand(serverName: string, sizes: SessionSizes): Promise<ProverSession> {
    onDemandSetups++;
    try {
      const session = track(await options.setup(serverName, sizes));
      served.onDemand++;
      return session;
    } finally {
      onDemandSetups--;
      queueMicrotask(pump);
    }
  }

  function remember(serverName: string, sizes: SessionSizes) {
    if (options.size === 0) return;
    learned = rememberHost(learned, serverName, options.hosts, options.learnHosts);
    const kept = new Set([...options.hosts, ...learned]);
    if (kept.has(serverName)) hostClass.set(serverName, sizes);
    for (const host of hostClass.keys()) if (!kept.has(host)) hostClass.delete(host);
  }

  async function acquire(serverName: string, need: SessionNeed): Promise<ProverSession> {
    if (stopped) throw new AppError("shutting_down", "the prover is shutting down");
    remember(serverName, need.class);

    for (let warm = takeReady(serverName, need.fits); warm; warm = takeReady(serverName, need.fits)) {
      if (await options.isAlive(warm)) {
        served.ready++;
        return track(warm);
      }
      expired++;
      log.warn("warm session lost its notary side while idle: closed", { host: serverName });
      options.discard(warm);
    }
    // A setup already under way for this host finishes sooner than a second one competing with it.
    const job = warming;
    if (job && job.host === serverName && !job.claimed && fitsIn(need.fits, job.sizes)) {
      job.claimed = true;
      try {
        const session = track(await job.session);
        served.warming++;
        return session;
      } catch {
        // The warming failed (and backs off); this request still gets its own attempt.
      }
    }
    return onDemand(serverName, need.setup);
  }

  queueMicrotask(pump);

  return {
    classes: options.classes,
    defaultClass: options.sizes,
    limits: options.limits,
    acquire,
    prepare(host, sizes, count) {
      const key = `${host} ${className(sizes)}`;
      if (count === 0) pinned.delete(key);
      else pinned.set(key, { host, sizes, count });
      log.info("warm sessions asked for", { host, class: className(sizes), count });
      queueMicrotask(pump);
    },
    drop(host) {
      for (const [key, pin] of pinned) if (pin.host === host) pinned.delete(key);
      learned = learned.filter((h) => h !== host);
      hostClass.delete(host);
      const closing = ready.filter((r) => r.session.serverName === host);
      for (const entry of closing) close(entry);
      log.info("warm sessions dropped", { host, closed: closing.length });
      queueMicrotask(pump);
      return closing.length;
    },
    status() {
      const hosts = [...wanted().values()].map(({ host, sizes, count }) => ({
        host,
        class: className(sizes),
        learned: learned.includes(host),
        pinned: [...pinned.values()].some((p) => p.host === host && sameClass(p.sizes, sizes)),
        share: count,
        ready: readyOf(host, sizes),
        warming: warmingOf(host, sizes),
      }));
      return {
        size: options.size,
        sizes: options.sizes,
        classes: options.classes.map(className),
        idleS: options.idleMs / 1000,
        ready: ready.length,
        inUse: inUse.size,
        warming: warming ? 1 : 0,
        hosts,
        served: { ...served },
        expired,
        failures,
        retryInMs: retryTimer ? Math.max(0, retryAt - Date.now()) : 0,
        lastError,
      };
    },
    stop() {
      stopped = true;
      clearTimeout(retryTimer);
      for (const entry of [...ready]) close(entry);
    },
  };
}
