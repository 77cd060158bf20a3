/**
 * Where a claim's subject is in an answer, and what its value is, read by the notary on the answer's bytes as it
 * saw them: all of them in proxy mode, the revealed ones in MPC mode (`seen`). A subject that is missing, named
 * twice (two header lines, two members of one name along a body path), or that an unseen byte could make
 * ambiguous (a hidden key or header name might be the same name) is refused, never guessed.
 */
import { AppError } from "../core/errors.ts";
import type { ByteRange } from "../core/transcript.ts";
import { rawRangesOf, viewOf } from "../core/byte-view.ts";
import { decodeString, type JsonNode, parseJson } from "../http1/json.ts";
import { type HeaderField, parseHttpMessage } from "../http1/message.ts";
import { type ClaimRequest, type ClaimSubject, JSON_NUMBER } from "./grammar.ts";

/** A subject's value as a predicate reads it; `json` is its JSON text in normal form (docs/proof-format.md, "Claims"). */
export type SubjectValue = { json: string } & (
  | { type: "number"; text: string }
  /** `numeric`: a header's text written as a JSON number, which compares as one (a header's value is always text). */
  | { type: "string"; value: string; numeric?: string }
  | { type: "boolean"; value: boolean }
  | { type: "null" }
  | { type: "object" | "array" }
);

export interface LocatedSubject {
  value: SubjectValue;
  /** The raw bytes of the answer that hold the value. */
  ranges: ByteRange[];
}

/** The answer as a notary saw it: its bytes (0 where unseen) and which of them it saw. */
export interface SeenAnswer {
  bytes: Uint8Array;
  /** Per byte: 1 when the notary saw it. */
  seen: Uint8Array;
}

export function claimRefused(claim: ClaimRequest, position: number, problem: string): AppError {
  return new AppError("claim_unsupported", `claim ${position} (${claim.subjectText}): ${problem}`, { claim: position });
}

/** Bytes as ISO-8859-1 text, one character a byte: header fields are bytes, not UTF-8. */
function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let at = 0; at < bytes.length; at += 4096) text += String.fromCharCode(...bytes.subarray(at, at + 4096));
  return text;
}
const utf8 = new TextDecoder();
const ascii = (bytes: Uint8Array, range: ByteRange) => latin1(bytes.subarray(range.start, range.end));
const allSeen = (answer: SeenAnswer, range: ByteRange) => answer.seen.subarray(range.start, range.end).every((b) => b === 1);

const stringValue = (value: string): SubjectValue => ({ type: "string", value, json: JSON.stringify(value) });

/** A JSON node's value; its text in normal form: strings as JSON.stringify writes them, numbers as written, no whitespace. */
function nodeValue(bytes: Uint8Array, node: JsonNode): SubjectValue {
  switch (node.kind) {
    case "string":
      return stringValue(utf8.decode(decodeString(bytes, node.range).bytes));
    case "scalar": {
      const text = ascii(bytes, node.range);
      if (text === "true" || text === "false") return { type: "boolean", value: text === "true", json: text };
      if (text === "null") return { type: "null", json: text };
      return { type: "number", text, json: text };
    }
    case "object":
      return { type: "object", json: `{${node.members.map((m) => `${JSON.stringify(m.key)}:${nodeValue(bytes, m.value).json}`).join(",")}}` };
    case "array":
      return { type: "array", json: `[${node.items.map((item) => nodeValue(bytes, item).json).join(",")}]` };
    case "hidden":
      throw new TypeError("a hidden JSON node has no value");
  }
}

type Locate = (answer: SeenAnswer, refuse: (problem: string) => AppError) => LocatedSubject;

export const HIDDEN_FROM_NOTARY = "the value is hidden from the notary (an MPC notary sees only what the proof reveals: use T-PROOF-MODE: proxy)";
const UNSEEN_HEAD = "a header name of the answer is hidden from the notary, so the subject could be ambiguous";

function headerFields(answer: SeenAnswer, refuse: (problem: string) => AppError): HeaderField[] {
  const { headers } = parseHttpMessage(answer.bytes);
  if (!headers.every((field) => allSeen(answer, field.name))) throw refuse(UNSEEN_HEAD);
  return headers;
}

function locateStatus(answer: SeenAnswer, refuse: (problem: string) => AppError): LocatedSubject {
  const { startLine } = parseHttpMessage(answer.bytes);
  const code = { start: startLine.start + 9, end: startLine.start + 12 };
  if (!allSeen(answer, { start: startLine.start, end: code.end })) throw refuse("the status line is hidden from the notary");
  const text = ascii(answer.bytes, code);
  if (!/^HTTP\/1\.[01] [0-9]{3}$/.test(ascii(answer.bytes, { start: startLine.start, end: code.end }))) throw refuse("the answer has no status line");
  return { value: { type: "number", text, json: text }, ranges: [code] };
}

const locateHeader =
  (name: string): Locate =>
  (answer, refuse) => {
    const fields = headerFields(answer, refuse).filter((field) => ascii(answer.bytes, field.name).toLowerCase() === name);
    if (fields.length === 0) throw refuse("the answer has no such header");
    if (fields.length > 1) throw refuse(`the answer has ${fields.length} lines of this header, so the subject is ambiguous`);
    const { value } = fields[0]!;
    const text = ascii(answer.bytes, value);
    // HTTP writes decimals with leading zeros at times (Content-Length: 0042); JSON never does.
    const numeric = JSON_NUMBER.test(text) ? text : /^[0-9]+$/.test(text) ? text.replace(/^0+(?=.)/, "") : undefined;
    return { value: { ...stringValue(text), ...(numeric === undefined ? {} : { numeric }) }, ranges: [value] };
  };

/** The one value at `path`; members of one name, or an unseen key, along it are refused as ambiguous. */
function valueAtPath(root: JsonNode, path: readonly string[], refuse: (problem: string) => AppError): JsonNode {
  let node = root;
  for (const segment of path) {
    if (node.kind === "object") {
      if (node.members.some((member) => member.key === null)) throw refuse("a key along the path is hidden from the notary, so the subject could be ambiguous");
      const matches = node.members.filter((member) => member.key === segment);
      if (matches.length > 1) throw refuse(`the body has ${matches.length} members named ${JSON.stringify(segment)}, so the subject is ambiguous`);
      if (matches.length === 0) throw refuse("the body has no value at this path");
      node = matches[0]!.value;
    } else if (node.kind === "array" && /^(0|[1-9][0-9]*)$/.test(segment) && Number(segment) < node.items.length) {
      node = node.items[Number(segment)]!;
    } else throw refuse("the body has no value at this path");
  }
  return node;
}

const FRAMING_HEADERS = new Set(["content-length", "transfer-encoding", "content-encoding"]);

const locateBody =
  (path: readonly string[]): Locate =>
  (answer, refuse) => {
    const message = parseHttpMessage(answer.bytes);
    for (const field of headerFields(answer, refuse)) {
      const name = ascii(answer.bytes, field.name).toLowerCase();
      if (FRAMING_HEADERS.has(name) && !allSeen(answer, field.value)) throw refuse(`the answer's ${name} is hidden from the notary`);
      if (name === "content-encoding" && ascii(answer.bytes, field.value).trim().toLowerCase() !== "identity") throw refuse("the answer's body is encoded");
    }
    const body = viewOf(answer.bytes, message.body);
    const unseen = new Uint8Array(body.bytes.length);
    for (const piece of body.pieces) unseen.set(answer.seen.subarray(piece.raw.start, piece.raw.end).map((b) => 1 - b), piece.viewStart);
    const root = parseJson(body.bytes, (at) => unseen[at] === 1);
    if (!root) throw refuse("the answer's body is not JSON");
    const node = valueAtPath(root, path, refuse);
    const ranges = rawRangesOf(body, node.range.start, node.range.end);
    // A value with a hidden byte inside cannot be read: the notary never saw it whole.
    // A value with an unseen byte inside (a hidden node, or hidden string content) cannot be read.
    if (!ranges.every((range) => allSeen(answer, range))) throw refuse(HIDDEN_FROM_NOTARY);
    return { value: nodeValue(body.bytes, node), ranges };
  };

function locatorOf(subject: ClaimSubject): Locate {
  if (subject.kind === "res:status") return locateStatus;
  if (subject.kind === "res:header") return locateHeader(subject.name);
  return locateBody(subject.path);
}

/** The claim's subject on the answer, or a claim_unsupported refusal naming the claim by position and subject. */
export function locateSubject(claim: ClaimRequest, position: number, answer: SeenAnswer): LocatedSubject {
  const refuse = (problem: string) => claimRefused(claim, position, problem);
  const located = locatorOf(claim.subject)(answer, refuse);
  if (!located.ranges.every((range) => allSeen(answer, range))) throw refuse(HIDDEN_FROM_NOTARY);
  return located;
}
