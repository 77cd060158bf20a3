/**
 * Typed redaction patterns for `prove({ redact })`, written out in the `T-REDACTED` grammar of
 * src/redaction/patterns.ts. The text is parsed back with the prover's own parser before it is sent, so what the
 * client asks for is exactly what the prover will hide, or the call fails here with `invalid_redaction`.
 */
import { AppError } from "../core/errors.ts";
import { type DefaultHidden, type RedactionPattern, entryText, parseRedactions } from "../redaction/patterns.ts";
import { TlsproofError } from "./errors.ts";

export type { RedactionPattern } from "../redaction/patterns.ts";

/** A body path: object keys, or array indices as numbers. */
export type BodyPath = readonly (string | number)[];

const bodyPath = (path: BodyPath): string[] => path.map(String);

/** Builders for every pattern kind; each returns the pattern object the prover's parser produces. */
export const redact = {
  /** The value of every request header with this name (the name stays visible). */
  requestHeader: (name: string): RedactionPattern => ({ kind: "req:header", name }),
  /** The JSON value at this path of the request body; no path: the whole body. */
  requestBody: (...path: BodyPath): RedactionPattern => ({ kind: "req:body", path: bodyPath(path) }),
  responseHeader: (name: string): RedactionPattern => ({ kind: "res:header", name }),
  responseBody: (...path: BodyPath): RedactionPattern => ({ kind: "res:body", path: bodyPath(path) }),
  /** The value of every query parameter with this name in the request target. */
  queryParameter: (name: string): RedactionPattern => ({ kind: "res:query", name }),
  /** Path segment `segment` (1-based) of the request target. */
  pathSegment: (segment: number): RedactionPattern => ({ kind: "res:path", segment }),
  /** Every occurrence of `text` in the response; the proof lists it as `search:*`. */
  search: (text: string): RedactionPattern => ({ kind: "search", text }),
  /** Shows a header the prover hides by default (credentials). */
  reveal: (header: DefaultHidden): RedactionPattern => ({ kind: "reveal", header }),
} as const;

/** Redactions as prove() takes them: patterns built with `redact`, or entries as `T-REDACTED` and `cli prove --redact` write them. */
export type Redactions = string | readonly (RedactionPattern | string)[];

/** `T-REDACTED` entries parsed, its errors as the client's. */
function parsed(entries: string): RedactionPattern[] {
  try {
    return parseRedactions(entries);
  } catch (error) {
    if (error instanceof AppError) throw new TlsproofError(error.code, error.message);
    throw error;
  }
}

/**
 * The `T-REDACTED` header value for these patterns. Throws TlsproofError("invalid_redaction") naming the entry
 * by position (never its text, which may be the secret) when the prover would refuse it or read it differently
 * (for instance a search text with spaces around it, which the grammar trims).
 */
export function redactionHeader(given: Redactions): string {
  const patterns = typeof given === "string" ? parsed(given) : given.flatMap((entry) => (typeof entry === "string" ? parsed(entry) : [entry]));
  const header = patterns.map(entryText).join(",");
  const parsedBack = parsed(header);
  const differs = patterns.findIndex((pattern, i) => parsedBack[i] === undefined || entryText(parsedBack[i]) !== entryText(pattern));
  if (differs >= 0 || parsedBack.length !== patterns.length) {
    const position = differs >= 0 ? differs + 1 : patterns.length;
    throw new TlsproofError("invalid_redaction", `redaction ${position} cannot be written so that the prover reads it back unchanged`);
  }
  return header;
}
