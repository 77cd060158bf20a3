/**
 * Several notaries behind one NotaryClient: new sessions go round-robin to the healthy ones that offer the mode; a
 * notary that fails (a session it cannot open, a health check it does not answer) or is not trusted is left out, in
 * every mode alike, and checked again after a back-off (1 s doubling to 30 s) until it answers. Every call about a
 * session goes to the notary that opened it: the pool's session ids carry the notary's position
 * (`<position>~<notary's id>`).
 */
import { AppError, toAppError } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import { type NotaryInfo, modeUnavailable, offersMode } from "../../protocol/notary.ts";
import type { NotaryClient } from "./client.ts";

export interface NotaryPoolOptions {
  /** How often a healthy notary is checked. */
  checkEveryMs: number;
  /** First and longest wait before an unhealthy notary is checked again. */
  backoff: { firstMs: number; maxMs: number };
  log: Logger;
}

/** What clients learn about one notary of the pool: its key (null until it answered once) and health. */
export interface NotaryStatus {
  publicKey: string | null;
  signatureAlgorithm: NotaryInfo["signatureAlgorithm"] | null;
  ethereumAddress: string | null;
  healthy: boolean;
}

interface Member {
  position: number;
  client: NotaryClient;
  healthy: boolean;
  /** Its last /info answer: keys are shown even while it is down. */
  info?: NotaryInfo;
  failures: number;
  /** When its last failure was counted: a call started before then failed in that same outage. */
  failedAt: number;
  nextCheckAt: number;
  /** Called once when it is found down: work waiting on its sessions (whileReachable) gives up. */
  onDown: Set<() => void>;
}

const SEPARATOR = "~";
/** Failures in a row after which work waiting on the notary's sessions gives up (whileReachable). */
const FAILURES_ENDING_SESSIONS = 2;

export class NotaryPool implements NotaryClient {
  private readonly members: Member[];
  /** Starts at a random notary: provers starting together do not all send their first sessions to the first one. */
  private cursor: number;
  private readonly timer: Timer;

  constructor(
    clients: readonly NotaryClient[],
    private readonly options: NotaryPoolOptions,
  ) {
    if (clients.length === 0) throw new AppError("internal", "a notary pool needs at least one notary");
    this.members = clients.map((client, position) => ({ position, client, healthy: true, failures: 0, failedAt: 0, nextCheckAt: 0, onDown: new Set<() => void>() }));
    this.cursor = Math.floor(Math.random() * clients.length);
    this.timer = setInterval(() => void this.checkDue(), Math.min(1000, options.backoff.firstMs));
    this.timer.unref();
    void this.checkDue();
  }

  /** A session on the next healthy notary that offers `mode` (by its /info); the others are tried in turn. */
  async createSession(mode: string, request: unknown): Promise<string> {
    let lastError: AppError | undefined;
    for (const member of this.candidates()) {
      const opened = await this.tryOpen(member, mode, request);
      if (typeof opened === "string") return opened;
      lastError = opened ?? lastError;
    }
    throw lastError ?? modeUnavailable(mode, this.members.length === 1 ? "the notary does not" : "no notary of PROVER_NOTARY_URL does");
  }

  /** How many notaries the pool holds, healthy or not. */
  get size(): number {
    return this.members.length;
  }

  /**
   * `count` clients for a quorum's members, no two opening sessions on the same notary. Each opens its first session on
   * the next healthy notary no other member took, moving on as createSession does when one fails, then stays with
   * it (a run that dials again goes through the same notary). Throws notary_unavailable (503) at once, before any
   * session, when fewer than `count` notaries are healthy.
   */
  distinct(count: number): NotaryClient[] {
    const healthy = this.members.filter((m) => m.healthy).length;
    if (healthy < count) {
      throw new AppError("notary_unavailable", `a quorum of ${count} needs ${count} notaries that answer; ${healthy} of the ${this.members.length} of PROVER_NOTARY_URL do`);
    }
    const taken = new Set<Member>();
    return Array.from({ length: count }, () => this.memberClient(taken));
  }

  /** One quorum member's client: session calls go to the notary it opened its first session on. */
  private memberClient(taken: Set<Member>): NotaryClient {
    let own: Member | undefined;
    const open = async (mode: string, request: unknown): Promise<string> => {
      if (own) {
        const opened = await this.tryOpen(own, mode, request);
        if (typeof opened === "string") return opened;
        throw opened ?? modeUnavailable(mode, "this quorum member's notary does not");
      }
      let lastError: AppError | undefined;
      for (const member of this.candidates()) {
        // Taken before the first await: members opening at once take different notaries.
        if (taken.has(member)) continue;
        taken.add(member);
        const opened = await this.tryOpen(member, mode, request);
        if (typeof opened === "string") {
          own = member;
          return opened;
        }
        lastError = opened ?? lastError;
      }
      throw lastError ?? new AppError("notary_unavailable", "no notary is left for this quorum member: each other one is another member's, or failed");
    };
    return {
      createSession: open,
      socketUrl: (mode, sessionId) => this.socketUrl(mode, sessionId),
      openSocket: (mode, sessionId, listener, timeoutMs) => this.openSocket(mode, sessionId, listener, timeoutMs),
      attest: (mode, sessionId, request) => this.attest(mode, sessionId, request),
      release: (mode, sessionId) => this.release(mode, sessionId),
      sessionState: (mode, sessionId) => this.sessionState(mode, sessionId),
      info: () => this.info(),
      reachable: (sessionId) => this.reachable(sessionId),
      whileReachable: (sessionId, work) => this.whileReachable(sessionId, work),
    };
  }

  /**
   * A session of `mode` on this notary: its pool id; an AppError when the next notary may be tried (it is down, not
   * trusted, or full); undefined when it does not offer the mode. Any other refusal is the request's, and thrown.
   */
  private async tryOpen(member: Member, mode: string, request: unknown): Promise<string | AppError | undefined> {
    // Asked only when its last /info, if any, does not show the mode (every notary offers MPC).
    if (!offersMode(member.info, mode)) member.info ??= await member.client.info().catch(() => undefined);
    if (!offersMode(member.info, mode)) return undefined;
    const startedAt = Date.now();
    try {
      const id = await member.client.createSession(mode, request);
      return `${member.position}${SEPARATOR}${id}`;
    } catch (error) {
      const failure = toAppError(error, "notary_unavailable");
      // An untrusted notary is left out like an unreachable one; the others may still serve.
      if (failure.code === "notary_unavailable" || failure.code === "notary_untrusted") this.markDown(member, failure.message, startedAt);
      else if (failure.code !== "over_capacity") throw failure;
      return failure;
    }
  }

  socketUrl(mode: string, sessionId: string): string {
    const { member, id } = this.route(sessionId);
    return member.client.socketUrl(mode, id);
  }

  openSocket(...[mode, sessionId, listener, timeoutMs]: Parameters<NotaryClient["openSocket"]>): ReturnType<NotaryClient["openSocket"]> {
    const { member, id } = this.route(sessionId);
    return member.client.openSocket(mode, id, listener, timeoutMs);
  }

  async attest(mode: string, sessionId: string, request: Parameters<NotaryClient["attest"]>[2]): ReturnType<NotaryClient["attest"]> {
    const { member, id } = this.route(sessionId);
    const startedAt = Date.now();
    try {
      return await member.client.attest(mode, id, request);
    } catch (error) {
      const failure = toAppError(error, "notary_unavailable");
      if (failure.code === "notary_unavailable") this.markDown(member, failure.message, startedAt);
      throw failure;
    }
  }

  release(mode: string, sessionId: string): Promise<void> {
    const { member, id } = this.route(sessionId);
    return member.client.release(mode, id);
  }

  sessionState(mode: string, sessionId: string): ReturnType<NotaryClient["sessionState"]> {
    const { member, id } = this.route(sessionId);
    return member.client.sessionState(mode, id);
  }

  whileReachable<T>(sessionId: string, work: Promise<T>): Promise<T> {
    const { member } = this.route(sessionId);
    return new Promise<T>((resolve, reject) => {
      const gone = () => reject(new AppError("notary_unavailable", "the notary went away during the session"));
      member.onDown.add(gone);
      work.then(resolve, reject).finally(() => member.onDown.delete(gone));
    });
  }

  async reachable(sessionId?: string): Promise<void> {
    if (sessionId === undefined) {
      if (this.members.some((m) => m.healthy)) return;
      throw new AppError("notary_unavailable", "no notary can be reached");
    }
    const { member } = this.route(sessionId);
    const startedAt = Date.now();
    try {
      member.info = await member.client.info();
    } catch (error) {
      const failure = toAppError(error, "notary_unavailable");
      this.markDown(member, failure.message, startedAt);
      throw failure;
    }
  }

  /**
   * Whether a healthy notary answers its /info now: asked afresh, not read from the health checks' last result,
   * which lags a notary that just died. One that fails is marked down like any failed call.
   */
  async answersNow(): Promise<boolean> {
    for (const member of this.members.filter((m) => m.healthy)) {
      const startedAt = Date.now();
      try {
        member.info = await member.client.info();
        return true;
      } catch (error) {
        this.markDown(member, toAppError(error, "notary_unavailable").message, startedAt);
      }
    }
    return false;
  }

  /**
   * The primary notary's /info: the first listed one that has answered (the first healthy one first), so
   * that clients reading one key (Verity's /notaryinfo) see a stable choice.
   */
  async info(): Promise<NotaryInfo> {
    const known = this.members.find((m) => m.healthy && m.info) ?? this.members.find((m) => m.info);
    if (known?.info) return known.info;
    let lastError: unknown;
    for (const member of this.members) {
      try {
        return (member.info = await member.client.info());
      } catch (error) {
        lastError = error;
      }
    }
    throw toAppError(lastError, "notary_unavailable");
  }

  /** Every notary in configuration order, with its key once it has answered. */
  statuses(): NotaryStatus[] {
    return this.members.map((m) => ({
      publicKey: m.info?.publicKey ?? null,
      signatureAlgorithm: m.info?.signatureAlgorithm ?? null,
      ethereumAddress: m.info?.ethereumAddress ?? null,
      healthy: m.healthy,
    }));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Healthy notaries round-robin from the cursor, then the others (a last try before failing). */
  private candidates(): Member[] {
    const n = this.members.length;
    const start = this.cursor;
    this.cursor = (this.cursor + 1) % n;
    const ordered = Array.from({ length: n }, (_, i) => this.members[(start + i) % n]!);
    return [...ordered.filter((m) => m.healthy), ...ordered.filter((m) => !m.healthy)];
  }

  private route(sessionId: string): { member: Member; id: string } {
    const cut = sessionId.indexOf(SEPARATOR);
    const member = cut > 0 ? this.members[Number(sessionId.slice(0, cut))] : undefined;
    if (!member) throw new AppError("internal", "a notary session id without its notary");
    return { member, id: sessionId.slice(cut + 1) };
  }

  /**
   * Counts a failure of a call started at `startedAt`. Calls in flight together fail together when the notary (or
   * this process) stalls: each running session checks every 2 s with a 10 s timeout, so one stall of 10 s (seen
   * under load: BENCHMARKS.md, "Notary sockets under load") fails several checks at once, which counted as two
   * failures in a row and gave up every setup on that notary. They count once.
   */
  private markDown(member: Member, reason: string, startedAt: number): void {
    if (!member.healthy && startedAt < member.failedAt) return;
    member.failedAt = Date.now();
    const { firstMs, maxMs } = this.options.backoff;
    const waitMs = Math.min(maxMs, firstMs * 2 ** member.failures);
    member.failures += 1;
    member.nextCheckAt = Date.now() + waitMs;
    if (member.healthy) this.options.log.warn("notary unavailable; sessions go to the others", { notary: member.position, reason, retryInMs: waitMs });
    member.healthy = false;
    // New sessions avoid it at once; running ones give up only when it fails again (one slow answer is no death).
    if (member.failures === FAILURES_ENDING_SESSIONS) for (const gone of [...member.onDown]) gone();
  }

  private async checkDue(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      this.members
        .filter((m) => m.nextCheckAt <= now)
        .map(async (member) => {
          // Set before the check: a slow answer is not checked again meanwhile.
          member.nextCheckAt = now + this.options.checkEveryMs;
          const startedAt = Date.now();
          try {
            member.info = await member.client.info();
          } catch (error) {
            this.markDown(member, toAppError(error, "notary_unavailable").message, startedAt);
            return;
          }
          if (!member.healthy) this.options.log.info("notary recovered; sessions go to it again", { notary: member.position });
          member.healthy = true;
          member.failures = 0;
        }),
    );
  }
}
