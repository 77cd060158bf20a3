/**
 * The `T-REDACTED` grammar: comma-separated entries, whitespace around entries ignored.
 * Anything malformed is rejected, never skipped: a typo must not turn into a revealed secret.
 * Error messages name the entry's position and the problem, never its text (it may be the secret).
 */
import { AppError } from "../errors.ts";

export type RedactionPattern =
  /** Values of request header lines with this name (case-insensitive). */
  | { kind: "req:header"; name: string }
  /** JSON value at this path of the request body; an empty path is the whole body. */
  | { kind: "req:body"; path: string[] }
  | { kind: "res:header"; name: string }
  | { kind: "res:body"; path: string[] }
  /** Values of query parameters with this name (compared as raw bytes, percent-encoding included). */
  | { kind: "res:query"; name: string }
  /** Path segment `segment` (1-based) of the request target. */
  | { kind: "res:path"; segment: number }
  /** Every occurrence of `text` (UTF-8) in the response, chunk framing aside. */
  | { kind: "search"; text: string };

type Kind = RedactionPattern["kind"];

const kinds: readonly Kind[] = ["req:header", "req:body", "res:header", "res:body", "res:query", "res:path", "search"];

/** RFC 9110 token characters: a header name made of anything else could never match. */
const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A name containing these could never be one query parameter's name. */
const queryNameForbidden = /[&=#?\s]/;
const segmentNumber = /^[1-9][0-9]*$/;

function fail(position: number, problem: string): never {
  throw new AppError("invalid_redaction", `T-REDACTED entry ${position}: ${problem}`, { entry: position });
}

function parseEntry(entry: string, position: number): RedactionPattern {
  if (entry === "") fail(position, "empty entry");
  const kind = kinds.find((k) => entry.startsWith(`${k}:`));
  if (!kind) fail(position, `unknown kind (expected one of ${kinds.map((k) => `${k}:`).join(", ")})`);
  const rest = entry.slice(kind.length + 1);
  switch (kind) {
    case "req:header":
    case "res:header":
      if (rest === "") fail(position, "missing header name");
      if (!headerName.test(rest)) fail(position, "header name has characters a header name cannot have");
      return { kind, name: rest };
    case "req:body":
    case "res:body": {
      const path = rest === "" ? [] : rest.split(".");
      if (path.some((segment) => segment === "")) fail(position, "body path has an empty segment");
      return { kind, path };
    }
    case "res:query":
      if (rest === "") fail(position, "missing query parameter name");
      if (queryNameForbidden.test(rest)) fail(position, "query parameter name has characters a name cannot have");
      return { kind, name: rest };
    case "res:path": {
      if (!segmentNumber.test(rest)) fail(position, "path segment must be a whole number from 1");
      const segment = Number(rest);
      if (!Number.isSafeInteger(segment)) fail(position, "path segment number too large");
      return { kind, segment };
    }
    case "search":
      if (rest === "") fail(position, "empty search text");
      return { kind, text: rest };
  }
}

/** The patterns of a `T-REDACTED` header, in order; an absent or blank header means none. */
export function parseRedactions(header: string | undefined): RedactionPattern[] {
  if (header === undefined || header.trim() === "") return [];
  return header.split(",").map((entry, index) => parseEntry(entry.trim(), index + 1));
}

/** The pattern as written in the proof: the entry as given, except that a search text never appears. */
export function publicPattern(pattern: RedactionPattern): string {
  switch (pattern.kind) {
    case "req:header":
    case "res:header":
    case "res:query":
      return `${pattern.kind}:${pattern.name}`;
    case "req:body":
    case "res:body":
      return `${pattern.kind}:${pattern.path.join(".")}`;
    case "res:path":
      return `${pattern.kind}:${pattern.segment}`;
    case "search":
      return "search:*";
  }
}
