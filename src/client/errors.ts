import type { ErrorCode } from "../core/errors.ts";

/** Failures the client detects itself, beside the prover's own codes (src/core/errors.ts). */
export type ClientErrorCode =
  /** `timeoutMs` passed before the response or the proof arrived. */
  | "timeout"
  /** The caller's `signal` aborted the call. */
  | "aborted"
  /** The prover could not be reached, or the connection broke. */
  | "network_error"
  /** The prover answered something that is not its protocol (an unexpected status or body). */
  | "bad_response";

export type TlsproofErrorCode = ErrorCode | ClientErrorCode;

/** What the target answered, when it did. */
export interface TargetResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
  /** The body as UTF-8 text. */
  text(): string;
  /** The body parsed as JSON; throws when it is not JSON. */
  json<T = unknown>(): T;
}

/**
 * Every failure of the client: `code` is the prover's error code (as in its JSON errors and proof stream
 * error events) or one of the client's own. `response` is the target's answer when there was one (for
 * example `target_request_failed`: the target answered ≥ 400 and no proof was asked for such answers).
 */
export class TlsproofError extends Error {
  constructor(
    readonly code: TlsproofErrorCode,
    message: string,
    readonly details: { status?: number; requestId?: string; retryAfterS?: number; response?: TargetResponse } = {},
  ) {
    super(message);
    this.name = "TlsproofError";
  }
}
