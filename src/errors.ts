/**
 * Every failure the product reports is an AppError with a code. The code alone decides the HTTP status,
 * the process exit code and whether a client is told to retry (`retryAfterS`, seconds), here and nowhere else.
 */
import * as v from "valibot";

export const errorCodes = {
  // Client input (HTTP 4xx, exit 2 for usage problems).
  invalid_header: { http: 400, exit: 2 },
  invalid_request_id: { http: 400, exit: 2 },
  duplicate_request_id: { http: 400, exit: 2 },
  invalid_body: { http: 400, exit: 2 },
  unsupported_method: { http: 400, exit: 2 },
  invalid_redaction: { http: 400, exit: 2 },
  invalid_query: { http: 400, exit: 2 },
  session_too_large: { http: 400, exit: 2 },
  unauthorized: { http: 401, exit: 2 },
  forbidden: { http: 403, exit: 2 },
  target_forbidden: { http: 403, exit: 2 },
  not_found: { http: 404, exit: 2 },
  // A notary session's one attestation was already asked for.
  session_taken: { http: 409, exit: 1 },
  target_unresolvable: { http: 404, exit: 1 },
  target_unreachable: { http: 404, exit: 1 },
  payload_too_large: { http: 413, exit: 2 },
  over_capacity: { http: 503, exit: 1, retryAfterS: 5 },
  shutting_down: { http: 503, exit: 1, retryAfterS: 5 },
  // Failures while proving (HTTP 5xx).
  target_request_failed: { http: 502, exit: 1 },
  target_timeout: { http: 504, exit: 1 },
  session_timeout: { http: 504, exit: 1 },
  response_too_large: { http: 500, exit: 1 },
  tls_unsupported: { http: 500, exit: 1 },
  // The target's certificate chain or host name was refused: an upstream fault, like a bad gateway's.
  tls_untrusted: { http: 502, exit: 1 },
  notary_unavailable: { http: 500, exit: 1 },
  session_failed: { http: 500, exit: 1 },
  storage_failed: { http: 500, exit: 1 },
  // Proof stream outcomes only: no proof will come for the request id.
  redaction_unmatched: { http: 422, exit: 1 },
  unknown_request: { http: 404, exit: 1 },
  internal: { http: 500, exit: 1 },
  // Command line only.
  usage: { http: 400, exit: 2 },
  config_invalid: { http: 400, exit: 2 },
  file_unreadable: { http: 400, exit: 2 },
  proof_invalid: { http: 400, exit: 1 },
} as const satisfies Record<string, { http: number; exit: number; retryAfterS?: number }>;

export type ErrorCode = keyof typeof errorCodes;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra fields for the JSON body (never secrets). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
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

/** Any thrown value as an AppError; unknown failures become `internal` with a generic message. */
export function toAppError(error: unknown, fallback: ErrorCode = "internal"): AppError {
  if (error instanceof AppError) return error;
  return new AppError(fallback, fallback === "internal" ? "internal error" : String((error as Error)?.message ?? error));
}

/** The JSON body of an HTTP error: `{"error": {"code", "message"}}`. */
export function errorBody(error: AppError): { error: { code: ErrorCode; message: string } & Record<string, unknown> } {
  return { error: { code: error.code, message: error.message, ...error.details } };
}

/** How a schema issue is worded; the default is `<path>: <message>`. */
export interface IssueWording {
  /** What was being parsed, put first: "entry 3", "notary config". */
  where?: string;
  /** The schema's messages are whole sentences naming the field (the store's reference texts): nothing is added. */
  messageOnly?: boolean;
  /** Also show the offending value (only for inputs that hold no secrets). */
  showInput?: boolean;
}

/** An offending value for a one-line message: short, and never a whole document. */
function shown(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** `a.b[0].c` for an issue's path. */
function issuePath(issue: v.BaseIssue<unknown>): string {
  return (issue.path ?? [])
    .map((item) => (typeof item.key === "number" ? `[${item.key}]` : `.${String(item.key)}`))
    .join("")
    .replace(/^\./, "");
}

/** One line for a schema issue: `unknown key "a.b"`, `missing key "a.b"` or `a.b: <message>`, after `where: `. */
export function describeIssue(issue: v.BaseIssue<unknown> | undefined, wording: IssueWording = {}): string {
  if (!issue) return `${wording.where ?? "input"}: invalid`;
  if (wording.messageOnly) return issue.message;
  const head = wording.where ? `${wording.where}: ` : "";
  const path = issuePath(issue);
  if (issue.type.startsWith("strict_") && issue.expected === "never") return `${head}unknown key "${path}"`;
  if (issue.received === "undefined" && path) return `${head}missing key "${path}"`;
  return `${head}${path || "value"}: ${issue.message}${wording.showInput ? `, got ${shown(issue.input)}` : ""}`;
}

/** The step from a failed valibot parse to an AppError, for every input the product reads. */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, code: ErrorCode, wording?: IssueWording): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  throw new AppError(code, describeIssue(result.issues[0], wording));
}
