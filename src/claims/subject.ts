/**
 * Where a claim's subject is in an answer, and what its value is, read by the notary on the answer's bytes as it
 * saw them: all of them in proxy mode, the revealed ones in MPC mode (`seen`), where only a part seen whole counts
 * (UNSEEN below). A subject that is missing or named twice (two header lines, two members of one name along a body
 * path) is refused, never guessed.
 */
import { AppError } from "../core/errors.ts";
import type { ByteRange } from "../core/transcript.ts";
import { rawRangesOf, viewOf } from "../core/byte-view.ts";
import { decodeString, type JsonNode, parseJson } from "../http1/json.ts";
import { type HttpMessage, parseHttpMessage } from "../http1/message.ts";
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

type Locate = (answer: SeenAnswer, message: HttpMessage, refuse: (problem: string) => AppError) => LocatedSubject;

/**
 * Why a notary that did not see all of an answer (MPC mode) judges only claims over a part it saw whole: a hidden
 * run of bytes may hold anything, a line break and a second header line of the asked name, a quote that ends a
 * string early, `,"balance":5` before the member the notary reads. Seen whole, the structure is the server's.
 */
const UNSEEN = "hidden from the notary, and hidden bytes could hold a second value of that name: an MPC notary judges claims only on";
const HEAD_UNSEEN = `the answer's head is ${UNSEEN} an answer whose head the proof reveals whole (and its body, for res:body); use T-PROOF-MODE: proxy`;
const BODY_UNSEEN = `part of the answer is ${UNSEEN} an answer the proof reveals whole; use T-PROOF-MODE: proxy`;

function locateStatus(answer: SeenAnswer, message: HttpMessage, refuse: (problem: string) => AppError): LocatedSubject {
  const code = { start: message.startLine.start + 9, end: message.startLine.start + 12 };
  if (!/^HTTP\/1\.[01] [0-9]{3}$/.test(ascii(answer.bytes, { start: message.startLine.start, end: code.end }))) throw refuse("the answer has no status line");
  const text = ascii(answer.bytes, code);
  return { value: { type: "number", text, json: text }, ranges: [code] };
}

const locateHeader =
  (name: string): Locate =>
  (answer, message, refuse) => {
    const fields = message.headers.filter((field) => ascii(answer.bytes, field.name).toLowerCase() === name);
    if (fields.length === 0) throw refuse("the answer has no such header");
    if (fields.length > 1) throw refuse(`the answer has ${fields.length} lines of this header, so the subject is ambiguous`);
    const { value } = fields[0]!;
    const text = ascii(answer.bytes, value);
    // HTTP writes decimals with leading zeros at times (Content-Length: 0042); JSON never does.
    const numeric = JSON_NUMBER.test(text) ? text : /^[0-9]+$/.test(text) ? text.replace(/^0+(?=.)/, "") : undefined;
    return { value: { ...stringValue(text), ...(numeric === undefined ? {} : { numeric }) }, ranges: [value] };
  };

/** The one value at `path`; members of one name along it are refused as ambiguous (parsers disagree on which wins). */
function valueAtPath(root: JsonNode, path: readonly string[], refuse: (problem: string) => AppError): JsonNode {
  let node = root;
  for (const segment of path) {
    if (node.kind === "object") {
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

const locateBody =
  (path: readonly string[]): Locate =>
  (answer, message, refuse) => {
    if (!allSeen(answer, { start: 0, end: answer.bytes.length })) throw refuse(BODY_UNSEEN);
    const encoded = message.headers.some((field) => ascii(answer.bytes, field.name).toLowerCase() === "content-encoding" && ascii(answer.bytes, field.value).toLowerCase() !== "identity");
    if (encoded) throw refuse("the answer's body is encoded");
    const body = viewOf(answer.bytes, message.body);
    const root = parseJson(body.bytes);
    if (!root) throw refuse("the answer's body is not JSON");
    const node = valueAtPath(root, path, refuse);
    return { value: nodeValue(body.bytes, node), ranges: rawRangesOf(body, node.range.start, node.range.end) };
  };

function locatorOf(subject: ClaimSubject): Locate {
  if (subject.kind === "res:status") return locateStatus;
  if (subject.kind === "res:header") return locateHeader(subject.name);
  return locateBody(subject.path);
}

/** The claim's subject on the answer, or a claim_unsupported refusal naming the claim by position and subject. */
export function locateSubject(claim: ClaimRequest, position: number, answer: SeenAnswer): LocatedSubject {
  const refuse = (problem: string) => claimRefused(claim, position, problem);
  const message = parseHttpMessage(answer.bytes);
  // The final head ends where the body begins (or with the answer); interim 1xx heads come before it.
  if (!allSeen(answer, { start: 0, end: message.body[0]?.start ?? answer.bytes.length })) throw refuse(HEAD_UNSEEN);
  return locatorOf(claim.subject)(answer, message, refuse);
}
