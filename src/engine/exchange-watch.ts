/**
 * Watching an MPC exchange from outside the engine, as its setup is watched (setup-watch.ts): an exchange whose engine
 * waits on something that will not come (`openssl s_server -www`'s answer, which ends with its connection) sends
 * nothing and says nothing until the session's deadline (300 s). Progress is a byte on either of its sockets: the MPC
 * socket (the notary counts it) or the target's connection (a long answer streams in while the MPC socket is quiet,
 * its decryption deferred). Without progress for `stallMs` the exchange is given up; once the target has closed, for
 * `quietAfterCloseMs`: nothing more can come from it. Either names proxy mode, which proves such targets. And an
 * answer larger than the session can hold is seen from its records' headers as it streams in (the engine would
 * fail it only once all of it came), and given up at once.
 */
import { AppError } from "../core/errors.ts";
import type { SessionCheck } from "../core/session-traffic.ts";

/** Once the target closed, how long an exchange without progress is waited for. */
export const QUIET_AFTER_TARGET_CLOSED_MS = 10_000;

export interface ExchangeWatchOptions {
  /** What the notary says of the session's socket. */
  check(): Promise<SessionCheck>;
  /** Bytes the target sent so far, of which application data (plaintext), and whether it has closed its connection. */
  target(): { bytes: number; plaintextBytes: number; closed: boolean };
  /** The most application data the session can receive: beyond it the exchange cannot succeed, and is given up at once. */
  plaintextLimit: number;
  checkMs: number;
  /** Without progress this long, the exchange is given up (the prover's silence limit, PROVER_RESPONSE_TIMEOUT). */
  stallMs: number;
  quietAfterCloseMs: number;
  now?(): number;
}

/** An exchange given up by its watch: the engine's call may never end. */
export class ExchangeGivenUp extends Error {
  constructor(
    readonly quietMs: number,
    readonly targetClosed: boolean,
  ) {
    super("the MPC exchange made no progress");
  }

  /** Why, for the client, naming proxy mode. */
  appError(): AppError {
    const seconds = Math.round(this.quietMs / 1000);
    return new AppError(
      "target_request_failed",
      this.targetClosed
        ? `the target closed the connection and the MPC exchange made no progress for ${seconds} s after it: an answer that ends with its connection (HTTP/1.0, or no Content-Length nor chunked framing) cannot be proven in MPC mode; proxy mode (T-PROOF-MODE: proxy) proves it`
        : `the MPC exchange made no progress for ${seconds} s: neither the target nor the notary's MPC socket carried a byte (the engine waits on something the target will not send); proxy mode (T-PROOF-MODE: proxy) proves such targets`,
    );
  }
}

/** An exchange whose target sent more application data than its session can receive: the engine would fail it later. */
export class AnswerTooLarge extends Error {
  constructor(readonly plaintextBytes: number) {
    super("the target sent more than the session can receive");
  }
}

/**
 * Waits for the exchange; rejects with AnswerTooLarge as soon as the target sent more than the session can receive,
 * or with ExchangeGivenUp once it made no progress for its limit.
 */
export function watchExchange<T>(work: Promise<T>, options: ExchangeWatchOptions): Promise<T> {
  const now = options.now ?? (() => performance.now());
  return new Promise<T>((resolve, reject) => {
    let seen: string | undefined;
    let movedAt = now();
    let settled = false;
    const timer = setInterval(() => {
      const sent = options.target().plaintextBytes;
      if (!settled && sent > options.plaintextLimit) {
        settled = true;
        clearInterval(timer);
        return reject(new AnswerTooLarge(sent));
      }
      void options.check().then((check) => {
        if (settled) return;
        const target = options.target();
        // A notary that does not count its socket's bytes gives no measure of progress: such an exchange waits.
        if (check.state !== "running" || !check.traffic) return;
        const bytes = `${check.traffic.fromProverBytes}/${check.traffic.toProverBytes}/${target.bytes}`;
        if (bytes !== seen) {
          seen = bytes;
          movedAt = now();
          return;
        }
        const quietMs = now() - movedAt;
        if (quietMs < (target.closed ? options.quietAfterCloseMs : options.stallMs)) return;
        settled = true;
        clearInterval(timer);
        reject(new ExchangeGivenUp(quietMs, target.closed));
      }, () => {});
    }, options.checkMs);
    work.then(resolve, reject).finally(() => {
      settled = true;
      clearInterval(timer);
    });
  });
}
