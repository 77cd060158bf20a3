/**
 * Watching an MPC setup from outside the engine. tlsn-wasm's setup may never settle: after its notary socket
 * drops it only logs `uid_mux::yamux: not connected`, and a setup whose two sides both wait on the other sends
 * nothing and says nothing (BENCHMARKS.md, "Stalled setups"). The notary knows both: whether the session still
 * runs, and what its socket carried. The setup asks it every few seconds.
 */
import type { SessionCheck, SessionTraffic } from "../core/session-traffic.ts";

/** What a watch has seen so far. */
export interface SetupProgress {
  /** The notary has said the session runs. */
  ran: boolean;
  /** Bytes the socket had carried both ways at the last change, and when that change was seen (running time). */
  bytes?: number;
  movedAtMs: number;
}

export type SetupVerdict =
  | { kind: "wait" }
  /** The session ran and no longer does: its socket closed. */
  | { kind: "ended" }
  /** The session runs, but its socket carried nothing either way for `quietMs`. */
  | { kind: "stalled"; quietMs: number; traffic: SessionTraffic };

const WAIT: SetupVerdict = { kind: "wait" };

/**
 * What one answer means for a setup, at `nowMs` of its engine's running time. Only an end after the session ran
 * counts (before, it waits for its socket); a notary that does not count traffic never calls a setup stalled.
 */
export function judgeSetup(
  progress: SetupProgress,
  check: SessionCheck,
  nowMs: number,
  quietLimitMs: number,
): { progress: SetupProgress; verdict: SetupVerdict } {
  if (check.state === "not_running") return { progress, verdict: progress.ran ? { kind: "ended" } : WAIT };
  if (check.state === "unknown") return { progress, verdict: WAIT };
  const { traffic } = check;
  if (!traffic) return { progress: { ...progress, ran: true }, verdict: WAIT };
  const bytes = traffic.fromProverBytes + traffic.toProverBytes;
  if (bytes !== progress.bytes) return { progress: { ran: true, bytes, movedAtMs: nowMs }, verdict: WAIT };
  const quietMs = nowMs - progress.movedAtMs;
  return { progress: { ...progress, ran: true }, verdict: quietMs >= quietLimitMs ? { kind: "stalled", quietMs, traffic } : WAIT };
}

/** Why a watched setup was given up, as SetupFailed's cause. */
export function verdictText(verdict: Exclude<SetupVerdict, { kind: "wait" }>): string {
  if (verdict.kind === "ended") return "the notary ended the session during its setup (its MPC socket closed)";
  const { fromProverBytes, toProverBytes } = verdict.traffic;
  return `the setup made no progress for ${Math.round(verdict.quietMs / 1000)} s: its MPC socket carried nothing either way (${fromProverBytes} bytes from the prover and ${toProverBytes} to it so far)`;
}

export interface SetupWatchOptions {
  /** Asks the notary about the session. */
  check(): Promise<SessionCheck>;
  /** The engine's running time in ms (a paused engine host's pauses left out: a paused setup is not stalled). */
  runningMs(): number;
  checkMs: number;
  quietLimitMs: number;
  /** What the engine's side says of a stalled setup, added to its error (BENCHMARKS.md, "Stalled setups"). */
  describeStall?(): Promise<string>;
}

/** Waits for a setup, or rejects with why the watch gave it up; the notary is asked no more once it settles. */
export function watchSetup<T>(work: Promise<T>, options: SetupWatchOptions): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let progress: SetupProgress = { ran: false, movedAtMs: options.runningMs() };
    let settled = false;
    const timer = setInterval(() => {
      void options.check().then((check) => {
        if (settled) return;
        const judged = judgeSetup(progress, check, options.runningMs(), options.quietLimitMs);
        progress = judged.progress;
        const { verdict } = judged;
        if (verdict.kind === "wait") return;
        // The engine's call may never settle: stop asking now.
        settled = true;
        clearInterval(timer);
        if (verdict.kind === "ended" || !options.describeStall) return reject(new Error(verdictText(verdict)));
        void options.describeStall().then(
          (engineSide) => reject(new Error(`${verdictText(verdict)}; ${engineSide}`)),
          () => reject(new Error(verdictText(verdict))),
        );
      }, () => {}); // a check that could not be made says nothing
    }, options.checkMs);
    work.then(resolve, reject).finally(() => {
      settled = true;
      clearInterval(timer);
    });
  });
}
