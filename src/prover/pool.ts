import type { ProverSession } from "../engine/session.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { SessionSizes } from "../protocol/notary.ts";
import { backoffMs, fitsIn, hostShares, rememberHost } from "./pool-policy.ts";

/** Where /proxy gets a set-up MPC session for a target. */
export interface SessionSource {
  /**
   * A session bound to `serverName` that can carry `needed` (the pool's sizes when not announced):
   * a warm one when ready, else one set up now with the announced sizes.
   */
  acquire(serverName: string, needed?: SessionSizes): Promise<ProverSession>;
  /** The warm sessions' sizes. */
  sizes: SessionSizes;
  /** The largest sizes a request may announce (the notary's limits). */
  limits: SessionSizes;
}

export interface WarmPool extends SessionSource {
  status(): PoolStatus;
  stop(): void;
}

export interface PoolOptions {
  /** Warm sessions to keep; 0 turns the pool off (every request sets its session up). */
  size: number;
  sizes: SessionSizes;
  limits: SessionSizes;
  /** Hosts always kept warm, in priority order. */
  hosts: string[];
  /** How many recently served hosts to keep warm besides `hosts`; 0 turns learning off. */
  learnHosts: number;
  idleMs: number;
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
  sizes: SessionSizes;
  idleS: number;
  ready: number;
  inUse: number;
  warming: number;
  hosts: { host: string; learned: boolean; share: number; ready: number; warming: number }[];
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
  session: Promise<ProverSession>;
  /** A request is waiting for this session: it goes to that request, not to the ready list. */
  claimed: boolean;
}

/**
 * A pool of sessions whose MPC setup is done, per host name (a prover is bound to its server name before
 * setup). Refills run one at a time and only while no request is in flight or setting up, so they never
 * compete with a live request for the CPU. Failures back off and never reach requests: those fall back
 * to an on-demand setup.
 */
export function createWarmPool(options: PoolOptions): WarmPool {
  const { log } = options;
  let learned: string[] = [];
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

  const priority = () => [...options.hosts, ...learned];
  const readyFor = (host: string) => ready.filter((r) => r.session.serverName === host).length;

  function track(session: ProverSession): ProverSession {
    inUse.add(session);
    session.onClose = () => {
      inUse.delete(session);
      // Close handlers run inside the request's code path; refill after it has moved on.
      queueMicrotask(pump);
    };
    return session;
  }

  function takeReady(host: string): ProverSession | undefined {
    const index = ready.findIndex((r) => r.session.serverName === host);
    if (index < 0) return undefined;
    const [entry] = ready.splice(index, 1);
    clearTimeout(entry!.idleTimer);
    return entry!.session;
  }

  function expire(entry: ReadySession) {
    const index = ready.indexOf(entry);
    if (index < 0) return;
    ready.splice(index, 1);
    expired++;
    log.info("warm session idle too long: closed", { host: entry.session.serverName });
    options.discard(entry.session);
    pump();
  }

  function addReady(session: ProverSession) {
    const entry: ReadySession = { session, idleTimer: setTimeout(() => expire(entry), options.idleMs) };
    ready.push(entry);
  }

  /** Drops ready sessions of hosts that lost their share (a newer learned host pushed them out). */
  function evictSurplus(shares: Map<string, number>) {
    for (const entry of [...ready]) {
      const host = entry.session.serverName;
      if (readyFor(host) > (shares.get(host) ?? 0)) {
        clearTimeout(entry.idleTimer);
        ready.splice(ready.indexOf(entry), 1);
        options.discard(entry.session);
      }
    }
  }

  function startWarming(host: string) {
    const job: WarmingJob = { host, claimed: false, session: options.setup(host, options.sizes) };
    warming = job;
    job.session.then(
      (session) => {
        warming = undefined;
        failures = 0;
        lastError = null;
        if (job.claimed) return;
        if (stopped) return options.discard(session);
        addReady(session);
        log.info("warm session ready", { host, ready: ready.length });
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

  /** Starts the next refill when the pool is short and nothing else needs the CPU. */
  function pump() {
    if (stopped || options.size === 0 || warming || retryTimer || inUse.size > 0 || onDemandSetups > 0) return;
    const shares = hostShares(options.size, priority());
    evictSurplus(shares);
    const host = [...shares].find(([h, share]) => readyFor(h) < share)?.[0];
    if (host) startWarming(host);
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

  async function acquire(serverName: string, needed?: SessionSizes): Promise<ProverSession> {
    if (stopped) throw new AppError("shutting_down", "the prover is shutting down");
    if (options.size > 0) learned = rememberHost(learned, serverName, options.hosts, options.learnHosts);
    if (needed && !fitsIn(needed, options.sizes)) return onDemand(serverName, needed);

    for (let warm = takeReady(serverName); warm; warm = takeReady(serverName)) {
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
    if (job && job.host === serverName && !job.claimed) {
      job.claimed = true;
      try {
        const session = track(await job.session);
        served.warming++;
        return session;
      } catch {
        // The warming failed (and backs off); this request still gets its own attempt.
      }
    }
    return onDemand(serverName, needed ?? options.sizes);
  }

  queueMicrotask(pump);

  return {
    sizes: options.sizes,
    limits: options.limits,
    acquire,
    status() {
      const shares = hostShares(options.size, priority());
      const hosts = priority().map((host) => ({
        host,
        learned: !options.hosts.includes(host),
        share: shares.get(host) ?? 0,
        ready: readyFor(host),
        warming: warming?.host === host ? 1 : 0,
      }));
      return {
        size: options.size,
        sizes: options.sizes,
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
      for (const entry of ready.splice(0)) {
        clearTimeout(entry.idleTimer);
        options.discard(entry.session);
      }
    },
  };
}
