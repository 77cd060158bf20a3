/**
 * One call's deadline and the shutdown's: when either comes first the run is abandoned with its reason, so that its
 * /proxy call gets an answer and its id an outcome. A mode can abandon its run too (MPC: a notary gone), and learns
 * of an abandonment through `signal` (to cut what it holds). Engine calls do not notice every failure, so the
 * lifecycle and the modes wait for work `within` the run.
 */
import { AppError } from "../../core/errors.ts";

export interface RunControl {
  /** Set when the run was abandoned. */
  failure?: AppError;
  /** Rejects with `failure` when the run is abandoned. */
  abandoned: Promise<never>;
  /** Aborts with `failure` when the run is abandoned: work waiting its turn leaves its queue, the mode cuts its work. */
  signal: AbortSignal;
  /** When the deadline passes, in performance.now() time: a mode retries a failed step only with time left. */
  deadlineAt: number;
  /** Abandons the run with this reason (the first reason stays). */
  abandon(error: AppError): void;
  /** Stops the deadline and the shutdown's watch; call once, when the run is over. */
  stop(): void;
}

export function startControl(deadlineMs: number, shutdown: AbortSignal): RunControl {
  let reject!: (error: AppError) => void;
  const abandoned = new Promise<never>((_, fail) => (reject = fail));
  abandoned.catch(() => {});
  const abort = new AbortController();
  const timer = setTimeout(() => control.abandon(new AppError("session_timeout", `the session took longer than ${deadlineMs} ms`)), deadlineMs);
  const shutDown = () => control.abandon(new AppError("shutting_down", "the prover shut down before this session ended (its grace period ran out)"));
  shutdown.addEventListener("abort", shutDown, { once: true });
  const control: RunControl = {
    abandoned,
    signal: abort.signal,
    deadlineAt: performance.now() + deadlineMs,
    abandon(error) {
      if (control.failure) return;
      control.failure = error;
      abort.abort(error);
      reject(error);
    },
    stop() {
      clearTimeout(timer);
      shutdown.removeEventListener("abort", shutDown);
    },
  };
  return control;
}

/**
 * Waits for work unless the run is abandoned first. Work that settles after that is handed to `lateCleanup`, so
 * that what arrives too late (a session) is still closed.
 */
export async function within<T>(control: Pick<RunControl, "failure" | "abandoned">, work: Promise<T>, lateCleanup: (value: T) => void = () => {}): Promise<T> {
  work.then(
    (value) => control.failure && lateCleanup(value),
    () => {},
  );
  return await Promise.race([work, control.abandoned]);
}
