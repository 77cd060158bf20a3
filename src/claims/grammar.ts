/**
 * The `T-CLAIM` grammar: comma-separated claims over the target's answer, each one of
 *   SUBJECT                  the subject's value, as JSON, stated in the proof
 *   SUBJECT OP LITERAL       whether the predicate holds, never the value (OP: == != > >= < <=)
 *   commit:SUBJECT           a salted commitment to the value (commitment.ts)
 * where SUBJECT is `res:status`, `res:header:<name>` or `res:body:<path>` (T-REDACTED's body paths: keys joined by
 * dots, array indices as numbers), and LITERAL a number, true, false, null, a JSON string in double quotes, or bare
 * text (a string). A backslash escapes the next character: `\,` `\.` `\\` and the operator characters `\=` `\!`
 * `\<` `\>` inside a path. Anything malformed is refused naming the entry by position, never skipped.
 * Prover and notary read a claim with this one parser: the notary parses the texts it is sent itself.
 */
import { AppError } from "../core/errors.ts";
import { isHttpToken } from "../core/http-token.ts";

export type ClaimSubject = { kind: "res:status" } | { kind: "res:header"; name: string } | { kind: "res:body"; path: string[] };

export const COMPARISONS = ["==", "!=", ">=", "<=", ">", "<"] as const;
export type Comparison = (typeof COMPARISONS)[number];

/** A predicate's right-hand side; a number keeps its decimal text, so nothing is rounded. */
export type Literal = { type: "number"; text: string } | { type: "string"; value: string } | { type: "boolean"; value: boolean } | { type: "null" };

/** One claim as asked; `subjectText` is its subject in normal form, as the proof states it. */
export type ClaimRequest = { subject: ClaimSubject; subjectText: string } & (
  | { kind: "value" }
  | { kind: "predicate"; op: Comparison; operand: Literal }
  | { kind: "commitment" }
);

/** At most this many claims per request, each at most this long: every one is evaluated and signed. */
export const MAX_CLAIMS = 32;
export const MAX_CLAIM_LENGTH = 512;

/** RFC 8259's number grammar. */
export const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
const OPERATOR_CHARS = new Set(["=", "!", "<", ">"]);
const ESCAPABLE = new Set([",", ".", "\\", ...OPERATOR_CHARS]);

export function claimError(position: number, problem: string): AppError {
  return new AppError("invalid_claim", `T-CLAIM entry ${position}: ${problem}`, { entry: position });
}

/** Splits at unescaped commas outside double-quoted strings; escapes stay in the pieces. */
function splitEntries(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "\\") i++;
    else if (char === '"') quoted = !quoted;
    else if (char === "," && !quoted) {
      pieces.push(text.slice(start, i));
      start = i + 1;
    }
  }
  pieces.push(text.slice(start));
  return pieces;
}

/** Index of the first unescaped operator character, or -1. */
function operatorAt(text: string): number {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (OPERATOR_CHARS.has(text[i]!)) return i;
  }
  return -1;
}

/** Splits at unescaped dots, resolving escapes. */
function pathSegments(written: string, position: number): string[] {
  const segments: string[] = [];
  let segment = "";
  for (let i = 0; i < written.length; i++) {
    const char = written[i]!;
    if (char === ".") {
      segments.push(segment);
      segment = "";
    } else if (char === "\\") {
      const next = written[++i];
      if (next === undefined || !ESCAPABLE.has(next)) throw claimError(position, "a backslash must be followed by , . \\ = ! < or >");
      segment += next;
    } else segment += char;
  }
  segments.push(segment);
  if (segments.some((s) => s === "")) throw claimError(position, "body path has an empty segment");
  return segments;
}

function parseSubject(written: string, position: number): ClaimSubject {
  if (written === "res:status") return { kind: "res:status" };
  if (written.startsWith("res:header:")) {
    const name = written.slice("res:header:".length).trim();
    if (!isHttpToken(name)) throw claimError(position, "res:header: needs a header name");
    return { kind: "res:header", name: name.toLowerCase() };
  }
  if (written.startsWith("res:body:")) return { kind: "res:body", path: pathSegments(written.slice("res:body:".length).trim(), position) };
  throw claimError(position, "a subject is res:status, res:header:<name> or res:body:<path>");
}

function parseLiteral(written: string, position: number): Literal {
  if (written === "") throw claimError(position, "the comparison has no value to compare with");
  if (JSON_NUMBER.test(written)) return { type: "number", text: written };
  if (written === "true" || written === "false") return { type: "boolean", value: written === "true" };
  if (written === "null") return { type: "null" };
  if (written.startsWith('"')) {
    try {
      // Text opening with a quote parses as a string or not at all.
      return { type: "string", value: JSON.parse(written) as string };
    } catch {
      throw claimError(position, "a quoted value must be one JSON string");
    }
  }
  if (written.includes("\\")) throw claimError(position, "write a value holding a backslash as a JSON string in double quotes");
  return { type: "string", value: written };
}

const escapeSegment = (segment: string) => segment.replace(/[\\,.=!<>]/g, (char) => `\\${char}`);

/** The subject in normal form: the header name in lower case, path segments escaped. */
export function subjectText(subject: ClaimSubject): string {
  if (subject.kind === "res:status") return "res:status";
  if (subject.kind === "res:header") return `res:header:${subject.name}`;
  return `res:body:${subject.path.map(escapeSegment).join(".")}`;
}

/** A literal as JSON text: what the proof states as a predicate's operand. */
export function literalText(literal: Literal): string {
  if (literal.type === "number") return literal.text;
  if (literal.type === "null") return "null";
  return JSON.stringify(literal.value);
}

/** One `T-CLAIM` entry (trimmed), `position` naming it in refusals. */
export function parseClaim(entry: string, position: number): ClaimRequest {
  if (entry === "") throw claimError(position, "empty entry");
  if (entry.length > MAX_CLAIM_LENGTH) throw claimError(position, `longer than ${MAX_CLAIM_LENGTH} characters`);
  if (entry.startsWith("commit:")) {
    const written = entry.slice("commit:".length).trim();
    if (operatorAt(written) >= 0) throw claimError(position, "commit: takes a subject only, no comparison");
    const subject = parseSubject(written, position);
    return { subject, subjectText: subjectText(subject), kind: "commitment" };
  }
  const at = operatorAt(entry);
  if (at < 0) {
    const subject = parseSubject(entry, position);
    return { subject, subjectText: subjectText(subject), kind: "value" };
  }
  const op = COMPARISONS.find((candidate) => entry.startsWith(candidate, at));
  if (op === undefined) throw claimError(position, `unknown comparison (expected one of ${COMPARISONS.join(" ")})`);
  const subject = parseSubject(entry.slice(0, at).trim(), position);
  const operand = parseLiteral(entry.slice(at + op.length).trim(), position);
  const ordered = op !== "==" && op !== "!=";
  if (ordered && operand.type !== "number") throw claimError(position, `${op} compares numbers only`);
  return { subject, subjectText: subjectText(subject), kind: "predicate", op, operand };
}

/** The claims of a `T-CLAIM` header, in order; an absent or blank header means none. */
export function parseClaims(header: string | undefined): ClaimRequest[] {
  if (header === undefined || header.trim() === "") return [];
  const entries = splitEntries(header);
  if (entries.length > MAX_CLAIMS) throw claimError(MAX_CLAIMS + 1, `at most ${MAX_CLAIMS} claims`);
  return entries.map((entry, index) => parseClaim(entry.trim(), index + 1));
}

/** `T-CLAIM-SALT`: 0x and 64 hex digits (32 bytes). */
export const CLAIM_SALT = /^0x[0-9a-fA-F]{64}$/;
/** `T-RECIPIENT`: an Ethereum address, 0x and 40 hex digits. */
export const RECIPIENT = /^0x[0-9a-fA-F]{40}$/;

/** The claim as a `T-CLAIM` entry in normal form: parseClaims reads it back as the same claim. */
export function claimText(claim: ClaimRequest): string {
  if (claim.kind === "commitment") return `commit:${claim.subjectText}`;
  if (claim.kind === "value") return claim.subjectText;
  // A string operand is written as a JSON string: commas inside its quotes do not split entries.
  return `${claim.subjectText}${claim.op}${literalText(claim.operand)}`;
}
