/**
 * The `T-REDACTED` grammar: comma-separated entries; whitespace around an entry and after its prefix ignored.
 * A backslash escapes the next character: `\,` is a comma inside an entry, `\\` a backslash, and `\.` a dot
 * inside one key of a body path (`res:body:a\.b.c` is key `a.b`, then key `c`). Any other escape is an error.
 * Anything malformed is rejected, never skipped: a typo must not turn into a revealed secret.
 * Error messages name the entry's position and the problem, never its text (it may be the secret).
 */
import { AppError } from "../core/errors.ts";
import { isHttpToken } from "../core/http-token.ts";

/**
 * What is hidden unless the client reveals it (`reveal:`), fail closed: credentials a proof must not show by accident.
 * Names are lower case. Request headers: those of DEFAULT_HIDDEN and every name isSecretHeaderName accepts; query
 * parameters: SECRET_QUERY_NAMES; answer headers: Set-Cookie.
 */
export type DefaultHidden = { kind: "req:header" | "res:header" | "res:query"; name: string };

export type RedactionPattern =
  /** Values of request header lines with this name (case-insensitive). */
  | { kind: "req:header"; name: string }
  /** JSON value at this path of the request body (keys or array indices); an empty path is the whole body. */
  | { kind: "req:body"; path: string[] }
  | { kind: "res:header"; name: string }
  | { kind: "res:body"; path: string[] }
  /** Values of query parameters with this name (compared as raw bytes, percent-encoding included). */
  | { kind: "res:query"; name: string }
  /** Path segment `segment` (1-based) of the request target. */
  | { kind: "res:path"; segment: number }
  /** Every occurrence of `text` (UTF-8) in the response, chunk framing aside, JSON escapes resolved. */
  | { kind: "search"; text: string }
  /** Shows a header that is hidden by default; hides nothing. */
  | { kind: "reveal"; header: DefaultHidden };

/** A pattern that hides something. */
export type HidingPattern = Exclude<RedactionPattern, { kind: "reveal" }>;

type Kind = RedactionPattern["kind"];

const kinds: readonly Kind[] = ["req:header", "req:body", "res:header", "res:body", "res:query", "res:path", "search", "reveal"];

/** The names hidden wherever they occur, whatever the request holds. */
export const DEFAULT_HIDDEN: readonly DefaultHidden[] = [
  { kind: "req:header", name: "authorization" },
  { kind: "req:header", name: "proxy-authorization" },
  { kind: "req:header", name: "cookie" },
  { kind: "res:header", name: "set-cookie" },
];

/** Request header names that carry a secret by convention, besides DEFAULT_HIDDEN's. */
export const SECRET_HEADER_NAMES: readonly string[] = ["x-api-key", "api-key", "x-auth-token", "x-access-token"];
/** Parts of a request header's name that say it carries a secret (`X-Session-Id`, `X-Client-Secret`, `X-Apikey`). */
export const SECRET_NAME_PARTS: readonly string[] = ["token", "secret", "password", "session", "api-key", "apikey"];
/** Query parameter names that carry a secret by convention (compared case-blind, as written, not percent-decoded). */
export const SECRET_QUERY_NAMES: readonly string[] = ["api_key", "apikey", "access_token", "token", "key", "sig", "signature"];

/** Whether a request header of this name is hidden by default: DEFAULT_HIDDEN, SECRET_HEADER_NAMES, SECRET_NAME_PARTS. */
export function isSecretHeaderName(name: string): boolean {
  const lower = name.toLowerCase();
  return DEFAULT_HIDDEN.some((d) => d.kind === "req:header" && d.name === lower) || SECRET_HEADER_NAMES.includes(lower) || SECRET_NAME_PARTS.some((part) => lower.includes(part));
}

/** Whether what `kind:name` names is hidden by default (and so may be revealed with `reveal:`). */
export function isDefaultHidden(kind: string, name: string): kind is DefaultHidden["kind"] {
  const lower = name.toLowerCase();
  if (kind === "req:header") return isSecretHeaderName(lower);
  if (kind === "res:query") return SECRET_QUERY_NAMES.includes(lower);
  return kind === "res:header" && lower === "set-cookie";
}

/** The default-hidden kinds and names, as a reveal: error names them. */
const REVEALABLE = `req:header:authorization, proxy-authorization, cookie, ${SECRET_HEADER_NAMES.join(", ")} or a name holding ${SECRET_NAME_PARTS.join(", ")}; res:query:${SECRET_QUERY_NAMES.join(", ")}; res:header:set-cookie`;

/**
 * Entries beyond these are refused: the notary takes at most 256 declared redactions of 1024 characters,
 * and a proof also lists the default-hidden headers and the echoes.
 */
export const MAX_ENTRIES = 250;
export const MAX_ENTRY_LENGTH = 1000;

/** A name containing these could never be one query parameter's name. */
const queryNameForbidden = /[&=#?\s]/;
const segmentNumber = /^[1-9][0-9]*$/;
const escapable = new Set([",", "\\", "."]);

function fail(position: number, problem: string): never {
  throw new AppError("invalid_redaction", `T-REDACTED entry ${position}: ${problem}`, { entry: position });
}

/** Splits `text` at unescaped `separator`s; escapes stay in the pieces. */
function splitUnescaped(text: string, separator: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === separator) {
      pieces.push(text.slice(start, i));
      start = i + 1;
    }
  }
  pieces.push(text.slice(start));
  return pieces;
}

function unescape(text: string, position: number): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== "\\") {
      out += text[i];
      continue;
    }
    const next = text[++i];
    if (next === undefined || !escapable.has(next)) fail(position, "a backslash must be followed by a comma, a dot or a backslash");
    out += next;
  }
  return out;
}

function parseDefaultHidden(rest: string, position: number): DefaultHidden {
  // The kind is written exactly, the name in any case.
  const kind = (["req:header", "res:header", "res:query"] as const).find((k) => rest.startsWith(`${k}:`));
  const name = kind === undefined ? "" : rest.slice(kind.length + 1).toLowerCase();
  if (kind === undefined || !isDefaultHidden(kind, name)) fail(position, `reveal: applies only to what is hidden by default: ${REVEALABLE}`);
  return { kind, name };
}

function parseEntry(entry: string, position: number): RedactionPattern {
  if (entry === "") fail(position, "empty entry");
  if (entry.length > MAX_ENTRY_LENGTH) fail(position, `longer than ${MAX_ENTRY_LENGTH} characters`);
  const kind = kinds.find((k) => entry.startsWith(`${k}:`));
  if (!kind) fail(position, `unknown kind (expected one of ${kinds.map((k) => `${k}:`).join(", ")})`);
  const written = entry.slice(kind.length + 1).trim();
  switch (kind) {
    case "req:header":
    case "res:header": {
      const name = unescape(written, position);
      if (name === "") fail(position, "missing header name");
      if (!isHttpToken(name)) fail(position, "header name has characters a header name cannot have");
      return { kind, name };
    }
    case "req:body":
    case "res:body": {
      const path = written === "" ? [] : splitUnescaped(written, ".").map((segment) => unescape(segment, position));
      if (path.some((segment) => segment === "")) fail(position, "body path has an empty segment");
      return { kind, path };
    }
    case "res:query": {
      const name = unescape(written, position);
      if (name === "") fail(position, "missing query parameter name");
      if (queryNameForbidden.test(name)) fail(position, "query parameter name has characters a name cannot have");
      return { kind, name };
    }
    case "res:path": {
      if (!segmentNumber.test(written)) fail(position, "path segment must be a whole number from 1");
      const segment = Number(written);
      if (!Number.isSafeInteger(segment)) fail(position, "path segment number too large");
      return { kind, segment };
    }
    case "search": {
      const text = unescape(written, position);
      if (text === "") fail(position, "empty search text");
      return { kind, text };
    }
    case "reveal":
      return { kind, header: parseDefaultHidden(written, position) };
  }
}

/** The patterns of a `T-REDACTED` header, one per entry, in order; an absent or blank header means none. */
export function parseRedactions(header: string | undefined): RedactionPattern[] {
  if (header === undefined || header.trim() === "") return [];
  const entries = splitUnescaped(header, ",");
  if (entries.length > MAX_ENTRIES) fail(MAX_ENTRIES + 1, `at most ${MAX_ENTRIES} entries`);
  const patterns = entries.map((entry, index) => parseEntry(entry.trim(), index + 1));
  patterns.forEach((pattern, index) => {
    if (pattern.kind !== "reveal") return;
    const { kind, name } = pattern.header;
    const hidden = patterns.findIndex((p) => p.kind === kind && p.name.toLowerCase() === name);
    if (hidden >= 0) fail(index + 1, `reveals what entry ${hidden + 1} hides`);
  });
  return patterns;
}

const escapeText = (text: string, special: RegExp) => text.replace(special, (char) => `\\${char}`);

/** The pattern as a `T-REDACTED` entry, in normal form: parseRedactions reads it back as the same pattern. */
export function entryText(pattern: RedactionPattern): string {
  switch (pattern.kind) {
    case "req:header":
    case "res:header":
      return `${pattern.kind}:${pattern.name}`;
    case "res:query":
      return `${pattern.kind}:${escapeText(pattern.name, /[\\,]/g)}`;
    case "req:body":
    case "res:body":
      return `${pattern.kind}:${pattern.path.map((segment) => escapeText(segment, /[\\,.]/g)).join(".")}`;
    case "res:path":
      return `${pattern.kind}:${pattern.segment}`;
    case "search":
      return `search:${escapeText(pattern.text, /[\\,]/g)}`;
    case "reveal":
      return `reveal:${pattern.header.kind}:${pattern.header.name}`;
  }
}

/** The pattern as written in the proof: its entry in normal form, except that a search text never appears. */
export function publicPattern(pattern: RedactionPattern): string {
  return pattern.kind === "search" ? "search:*" : entryText(pattern);
}
