/**
 * Every failure the product reports is an AppError with a code. The code alone decides the HTTP status,
 * the process exit code and whether a client is told to retry (`retryAfterS`, seconds), here and nowhere else.
 * The status says whose fault it is: 4xx the caller's request; 502 a target's (or the notary's) failure or limit,
 * 504 when it was too slow; 503 a load or availability limit to retry after `Retry-After`; 429 a caller's own quota,
 * also with `Retry-After`; 500 our own failure.
 * Every 5xx exits 1. test/core/errors.test.ts pins these rules.
 */

export const errorCodes = {
  // Client input (HTTP 4xx, exit 2 for usage problems).
  invalid_header: { http: 400, exit: 2 },
  invalid_request_id: { http: 400, exit: 2 },
  duplicate_request_id: { http: 400, exit: 2 },
  invalid_body: { http: 400, exit: 2 },
  unsupported_method: { http: 400, exit: 2 },
  invalid_redaction: { http: 400, exit: 2 },
  invalid_claim: { http: 400, exit: 2 },
  invalid_query: { http: 400, exit: 2 },
  session_too_large: { http: 400, exit: 2 },
  // Proxy mode was asked of a notary (or a prover's notaries) that does not offer it.
  proxy_mode_unavailable: { http: 400, exit: 1 },
  // Another proof mode was asked of notaries that do not offer it (src/protocol/notary.ts, modeUnavailable).
  mode_unavailable: { http: 400, exit: 1 },
  unauthorized: { http: 401, exit: 2 },
  forbidden: { http: 403, exit: 2 },
  // The prover's policy refused the target the caller named: the caller's choice, not the target's failure.
  target_forbidden: { http: 403, exit: 2 },
  not_found: { http: 404, exit: 2 },
  // A notary session's one attestation was already asked for.
  session_taken: { http: 409, exit: 1 },
  // A notary already signed a statement for this request id (its ledger, src/notary/ledger.ts): one per id, ever.
  already_attested: { http: 409, exit: 1 },
  payload_too_large: { http: 413, exit: 2 },
  /** A publish beyond what its caller may send in a minute, or its stream may hold. */
  quota_exceeded: { http: 429, exit: 1, retryAfterS: 60 },
  over_capacity: { http: 503, exit: 1, retryAfterS: 5 },
  shutting_down: { http: 503, exit: 1, retryAfterS: 5 },
  // The server listens (its port is taken first) but is still starting.
  starting: { http: 503, exit: 1, retryAfterS: 1 },
  // A target's failures and limits (HTTP 502, 504 when too slow): the prover stood in as a gateway and the
  // target's side failed or exceeded what a proof may hold. Never 404 (a wrong route) nor 500 (our bug).
  target_unresolvable: { http: 502, exit: 1 },
  target_unreachable: { http: 502, exit: 1 },
  target_request_failed: { http: 502, exit: 1 },
  target_timeout: { http: 504, exit: 1 },
  session_timeout: { http: 504, exit: 1 },
  // Mostly the answer; also a request over the caller's own T-MAX-SENT-DATA (the message names the direction).
  response_too_large: { http: 502, exit: 1 },
  // The target does not speak what the mode proves (MPC: TLS 1.2 with the engine's suite; proxy: TLS 1.2/1.3 AEAD).
  tls_unsupported: { http: 502, exit: 1 },
  // The target's certificate chain or host name was refused: an upstream fault, like a bad gateway's.
  tls_untrusted: { http: 502, exit: 1 },
  // A TLS 1.3 target refused the client's KeyUpdate (an alert or a close before answering): proxy mode cannot
  // hide the request's secrets from the notary there; MPC mode can prove it.
  target_key_update_refused: { http: 502, exit: 1 },
  // The target encoded its answer (gzip, …) though identity was asked: it cannot be redacted, so no proof.
  target_encoding_refused: { http: 502, exit: 1 },
  // No notary can be reached (or one refused this prover): the service is unavailable for now, try again later.
  notary_unavailable: { http: 503, exit: 1, retryAfterS: 5 },
  // The notary's signed answer failed the prover's checks (key, signature, request id, mode): no proof.
  notary_untrusted: { http: 502, exit: 1 },
  // Our own failures (HTTP 500): the MPC session or the store's database failed.
  session_failed: { http: 500, exit: 1 },
  storage_failed: { http: 500, exit: 1 },
  // Proof stream outcomes only: no proof will come for the request id.
  redaction_unmatched: { http: 422, exit: 1 },
  // A claim the answer cannot support as asked: its subject is missing, ambiguous, of another type than the
  // comparison, hidden from the notary (MPC mode), or a value the proof hides. 422 likewise.
  claim_unsupported: { http: 422, exit: 1 },
  // Proxy mode: the relayed TLS bytes are malformed, or the prover's revealed keys do not open them. The
  // prover's submission is well formed but fails the check, as with redaction_unmatched: 422, never retried.
  transcript_invalid: { http: 422, exit: 1 },
  // What a notary signs is one complete HTTP/1.1 answer (src/http1/answer-rule.ts); the prover's exchange is not: it
  // ended early, holds more than one answer (or request), is encoded, or cannot be framed one way. 422 likewise.
  answer_incomplete: { http: 422, exit: 1 },
  answer_not_single: { http: 422, exit: 1 },
  answer_encoded: { http: 422, exit: 1 },
  answer_malformed: { http: 422, exit: 1 },
  /** The request the proof would show is not proven to be what the server read (src/proof/request-rule.ts). */
  request_unproven: { http: 422, exit: 1 },
  // The server chose an application protocol other than HTTP/1.1 (ALPN h2, …).
  alpn_refused: { http: 422, exit: 1 },
  // A proxy session's attestation asked for longer after its relay ended than the notary allows.
  attestation_late: { http: 422, exit: 1 },
  // A quorum's sessions (T-QUORUM) do not state the same: a value changed between them, or they show no one request.
  quorum_disagreement: { http: 422, exit: 1 },
  unknown_request: { http: 404, exit: 1 },
  // The id's outcome was deleted after the store's retention time (PROVER_STORE_RETENTION): gone for good.
  outcome_expired: { http: 410, exit: 1 },
  internal: { http: 500, exit: 1 },
  // Command line only.
  usage: { http: 400, exit: 2 },
  config_invalid: { http: 400, exit: 2 },
  // Another live process holds the data folder (src/core/folder-lock.ts).
  data_dir_in_use: { http: 409, exit: 2 },
  file_unreadable: { http: 400, exit: 2 },
  proof_invalid: { http: 400, exit: 1 },
  // A valid proof of something else than what was expected (request id, server name, the answer received).
  proof_mismatch: { http: 400, exit: 1 },
} as const satisfies Record<string, { http: number; exit: number; retryAfterS?: number }>;

export type ErrorCode = keyof typeof errorCodes;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra fields for the JSON body (never secrets). */
    readonly details?: Record<string, unknown>,
    /** What failed underneath (an engine error): for the log, never for a response body. */
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "AppError";
  }
}

export const httpStatusOf = (code: ErrorCode): number => errorCodes[code].http;
export const exitCodeOf = (code: ErrorCode): number => errorCodes[code].exit;
/** Seconds after which a client may try again, for the codes that are about load, not about the request. */
export const retryAfterOf = (code: ErrorCode): number | undefined => {
  const entry = errorCodes[code];
  return "retryAfterS" in entry ? entry.retryAfterS : undefined;
};
export const isErrorCode = (text: string): text is ErrorCode => Object.hasOwn(errorCodes, text);

/** The message of any thrown value. */
export const errorText = (error: unknown): string => String((error as Error)?.message ?? error);

/** Any thrown value as an AppError; unknown failures become `internal` with a generic message. */
export function toAppError(error: unknown, fallback: ErrorCode = "internal"): AppError {
  if (error instanceof AppError) return error;
  return new AppError(fallback, fallback === "internal" ? "internal error" : errorText(error));
}

/** The JSON body of an HTTP error: `{"error": {"code", "message"}}`. */
export function errorBody(error: AppError): { error: { code: ErrorCode; message: string } & Record<string, unknown> } {
  return { error: { code: error.code, message: error.message, ...error.details } };
}
