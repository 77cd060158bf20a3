import type { TcpHandle } from "../../engine/bridge.ts";
import { type ProverSession, abandonProverSession, closeProverSession } from "../../engine/session.ts";
import { AppError } from "../../errors.ts";
import type { SessionSlots } from "../exchange/capacity.ts";
import type { NotaryClient } from "../notary/client.ts";

/** Ends a session that will make no proof: frees the engine's prover and the notary's slot now. */
export function discardSession(notary: Pick<NotaryClient, "release">, session: ProverSession): void {
  closeProverSession(session);
  void notary.release(session.notarySessionId);
}

/** How often a running session checks that its notary is still there. */
const NOTARY_CHECK_MS = 2_000;
/** Failed checks in a row before the notary counts as gone (one can be a hiccup). */
const NOTARY_CHECKS_FAILED = 2;

/** One request's slot, deadline and notary watch, from acquiring an MPC session to the end of its proof. */
export interface SessionRun {
  session?: ProverSession;
  tcp?: TcpHandle;
  /** Set when the run was abandoned: its deadline passed or its notary went away. */
  failure?: AppError;
  /** Rejects with `failure` when the run is abandoned. */
  abandoned: Promise<never>;
  /** Aborts with `failure` when the run is abandoned: work waiting its turn for the run leaves its queue. */
  signal: AbortSignal;
  /** When the session deadline passes, in performance.now() time: a failed setup is retried only with time left. */
  deadlineAt: number;
  /** Ends the session without a proof (after an abandonment the session is already closed). */
  discard(): void;
  /** Frees the slot and stops the timers; call once, when the run is over. */
  end(): void;
}

export interface SessionRunDeps {
  slots: SessionSlots;
  notary: NotaryClient;
  sessionTimeoutMs: number;
  /** Aborted when the prover's shutdown grace runs out: sessions still running end as `shutting_down`. */
  shutdown: AbortSignal;
}

/**
 * Takes a slot (or throws over_capacity) and arms the session deadline and the notary watch. The engine
 * does not notice every failure (a notary that dies during MPC setup leaves it waiting), so an abandoned
 * run cuts the target connection and the notary session, and `within` stops waiting for the engine.
 */
export function startRun(deps: SessionRunDeps): SessionRun {
  const releaseSlot = deps.slots.take();
  let reject!: (error: AppError) => void;
  const abandoned = new Promise<never>((_, fail) => (reject = fail));
  abandoned.catch(() => {});
  const abort = new AbortController();
  const abandon = (error: AppError) => {
    if (run.failure) return;
    run.failure = error;
    abort.abort(error);
    run.tcp?.close();
    if (run.session) {
      // An engine call may still be running on it, and may never end.
      abandonProverSession(run.session);
      void deps.notary.release(run.session.notarySessionId);
    }
    reject(error);
  };
  const timer = setTimeout(
    () => abandon(new AppError("session_timeout", `the session took longer than ${deps.sessionTimeoutMs} ms`)),
    deps.sessionTimeoutMs,
  );
  // Abandoned like a deadline: its /proxy call gets an answer and its id an outcome before the server closes.
  const shutDown = () => abandon(new AppError("shutting_down", "the prover shut down before this session ended (its grace period ran out)"));
  deps.shutdown.addEventListener("abort", shutDown, { once: true });
  let failedChecks = 0;
  const watch = setInterval(() => {
    deps.notary.reachable(run.session?.notarySessionId).then(
      () => (failedChecks = 0),
      () => {
        failedChecks += 1;
        if (failedChecks >= NOTARY_CHECKS_FAILED) abandon(new AppError("notary_unavailable", "the notary went away during the session"));
      },
    );
  }, NOTARY_CHECK_MS);
  const run: SessionRun = {
    abandoned,
    signal: abort.signal,
    deadlineAt: performance.now() + deps.sessionTimeoutMs,
    discard() {
      if (run.session && !run.failure) discardSession(deps.notary, run.session);
    },
    end() {
      clearTimeout(timer);
      clearInterval(watch);
      deps.shutdown.removeEventListener("abort", shutDown);
      releaseSlot();
    },
  };
  return run;
}

/**
 * Waits for engine work unless the run is abandoned first. Work that settles after that is handed to
 * `lateCleanup`, so a session that arrives too late is still closed.
 */
export async function within<T>(run: SessionRun, work: Promise<T>, lateCleanup: (value: T) => void = () => {}): Promise<T> {
  work.then(
    (value) => run.failure && lateCleanup(value),
    () => {},
  );
  return await Promise.race([work, run.abandoned]);
}
