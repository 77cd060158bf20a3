/**
 * One HTTP/1.1 message read strictly (RFC 9112), for what a notary signs: lines end in CRLF, field lines are
 * `name: value` (no obsolete folding), the body is framed by Transfer-Encoding: chunked (through its last chunk and
 * trailers) or Content-Length (one value), or by nothing. Unlike message.ts, which reads any bytes leniently, this
 * reader says where a message ends or why it cannot tell. Which parts of the start line must have been seen is the
 * caller's rule (a request's path may be hidden).
 *
 * It reads what its caller saw: bytes it did not see are 0 (never a CR, an LF, a colon or a space), and every byte a
 * decision rests on (the start line, field names, the framing fields' values, chunk-size lines) must have been seen.
 */
import type { ByteRange } from "../core/transcript.ts";
import { isHttpToken } from "../core/http-token.ts";

export interface SeenBytes {
  /** The message's bytes, 0 where they were not seen. */
  bytes: Uint8Array;
  /** Whether every byte of the range was seen. */
  isSeen(range: ByteRange): boolean;
}

/** The whole of `bytes`, seen: what a proxy-mode notary decrypted itself. */
export const allSeen = (bytes: Uint8Array): SeenBytes => ({ bytes, isSeen: () => true });

/**
 * Why a message is refused: it ends before its framing says (`incomplete`), breaks the syntax (`malformed`), holds
 * bytes after its end (`extra`), declares a transfer coding other than chunked (`encoded`), or hides a byte the
 * decision needs (`unseen`).
 */
export type ProblemKind = "incomplete" | "malformed" | "extra" | "encoded" | "unseen";

export class MessageProblem extends Error {
  constructor(
    readonly kind: ProblemKind,
    message: string,
  ) {
    super(message);
    this.name = "MessageProblem";
  }
}

/** A field line; its name is read from its bytes by whoever looks for a name (`fieldItems`). */
export interface Field {
  /** Whether the name and the colon ending it were seen. A field whose name was not is read by nobody: a rule that
   * reads a field refuses one that could be it. */
  nameSeen: boolean;
  /** The value without surrounding whitespace (empty at the line's end when the name's end was not seen). */
  value: ByteRange;
  line: ByteRange;
}

export interface StrictHead {
  startLine: ByteRange;
  /** The start line as latin1 text. */
  startText: string;
  fields: Field[];
  /** Where the body begins: just after the empty line. */
  bodyStart: number;
}

export type BodyFraming = { kind: "chunked" } | { kind: "length"; length: number } | { kind: "none" };

const CR = 0x0d;
const LF = 0x0a;
const latin1 = new TextDecoder("latin1");
const text = (view: SeenBytes, range: ByteRange) => latin1.decode(view.bytes.subarray(range.start, range.end));

interface Line extends ByteRange {
  /** Start of the next line. */
  next: number;
}

/** The CRLF-ended line at `pos`, or null when no line break follows (the message is cut short). */
function lineAt(view: SeenBytes, pos: number, what: string): Line | null {
  const lf = view.bytes.indexOf(LF, pos);
  if (lf < 0) return null;
  if (lf === pos || view.bytes[lf - 1] !== CR) throw new MessageProblem("malformed", `${what} ends with a bare LF, not CRLF`);
  if (view.bytes.subarray(pos, lf - 1).includes(CR)) throw new MessageProblem("malformed", `${what} holds a bare CR`);
  return { start: pos, end: lf - 1, next: lf + 1 };
}

const isBlank = (byte: number | undefined) => byte === 0x20 || byte === 0x09;

/** A field line's name and value; `what` names the part of the message for problems. */
function fieldOf(view: SeenBytes, line: Line, what: string): Field {
  // A hidden first byte could be a space: an obsolete fold continuing the previous field's value.
  if (!view.isSeen({ start: line.start, end: line.start + 1 })) throw new MessageProblem("unseen", `a field name in ${what} is hidden`);
  if (isBlank(view.bytes[line.start])) throw new MessageProblem("malformed", `${what} continues a field on a new line (obsolete line folding)`);
  const colon = view.bytes.subarray(line.start, line.end).indexOf(0x3a);
  const nameEnd = colon < 0 ? line.end : line.start + colon;
  // The name and its colon; without a seen colon, the whole line (a colon may be among its hidden bytes).
  const nameSeen = view.isSeen({ start: line.start, end: Math.min(nameEnd + 1, line.end) });
  // An unseen byte stands for any token byte (a colon among them would end the name earlier, which couldBe allows
  // for); a seen one is what it is: a NUL or another control byte in a name is no token.
  let name = "";
  for (let at = line.start; at < nameEnd; at++) name += view.isSeen({ start: at, end: at + 1 }) ? String.fromCharCode(view.bytes[at]!) : "a";
  if ((nameSeen && colon < 0) || !isHttpToken(name)) throw new MessageProblem("malformed", `${what} holds a line that is not a field (name: value)`);
  if (!nameSeen) return { nameSeen, value: { start: line.end, end: line.end }, line };
  let start = nameEnd + 1;
  let end = line.end;
  while (start < end && isBlank(view.bytes[start])) start++;
  while (end > start && isBlank(view.bytes[end - 1])) end--;
  return { nameSeen, value: { start, end }, line };
}

/**
 * Whether the field could be named `name` (lower-case): its seen bytes agree with `name` followed by a colon. For a
 * seen name that is plain equality; a name longer than the line meets its CR, which is always seen.
 */
function couldBe(view: SeenBytes, field: Field, name: string): boolean {
  const colonAt = field.line.start + name.length;
  const seen = (at: number) => view.isSeen({ start: at, end: at + 1 });
  for (let i = 0; i < name.length; i++) {
    const at = field.line.start + i;
    if (seen(at) && String.fromCharCode(view.bytes[at]!).toLowerCase() !== name[i]) return false;
  }
  return !seen(colonAt) || view.bytes[colonAt] === 0x3a;
}

/** Field lines from `pos` up to and including the empty line that ends them; null end when they do not end. */
function readFields(view: SeenBytes, pos: number, what: string): { fields: Field[]; next: number } {
  const fields: Field[] = [];
  for (;;) {
    const line = lineAt(view, pos, what);
    if (!line) throw new MessageProblem("incomplete", `${what} does not end (no empty line)`);
    if (line.end === line.start) return { fields, next: line.next };
    fields.push(fieldOf(view, line, what));
    pos = line.next;
  }
}

export function readHead(view: SeenBytes, what: string): StrictHead {
  if (view.bytes.length === 0) throw new MessageProblem("incomplete", `there is no ${what}`);
  const first = lineAt(view, 0, `the ${what}'s start line`);
  if (!first) throw new MessageProblem("incomplete", `the ${what}'s start line does not end`);
  const { fields, next } = readFields(view, first.next, `the ${what}'s head`);
  return { startLine: { start: first.start, end: first.end }, startText: text(view, first), fields, bodyStart: next };
}

/** The comma-separated items of every field named `name`, trimmed and lower-cased; each value must have been seen. */
export function fieldItems(view: SeenBytes, head: StrictHead, name: string): string[] {
  return head.fields
    .filter((field) => couldBe(view, field, name))
    .flatMap((field) => {
      if (!field.nameSeen) throw new MessageProblem("unseen", `a hidden field name could be ${name}`);
      if (!view.isSeen(field.value)) throw new MessageProblem("unseen", `the ${name} field's value is hidden`);
      return text(view, field.value).split(",");
    })
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== "");
}

/** How the head frames the body: one chunked coding, one Content-Length, or neither (never both). */
export function framingOf(view: SeenBytes, head: StrictHead): BodyFraming {
  const codings = fieldItems(view, head, "transfer-encoding");
  const lengths = fieldItems(view, head, "content-length");
  if (codings.length > 0 && lengths.length > 0) throw new MessageProblem("malformed", "the head has both Transfer-Encoding and Content-Length");
  if (codings.length > 0) {
    if (codings.some((coding) => coding !== "chunked")) throw new MessageProblem("encoded", "the body has a transfer coding other than chunked");
    if (codings.length > 1) throw new MessageProblem("malformed", "the body is chunked more than once");
    return { kind: "chunked" };
  }
  if (lengths.length === 0) return { kind: "none" };
  if (lengths.some((length) => !/^[0-9]{1,15}$/.test(length) || length !== lengths[0])) {
    throw new MessageProblem("malformed", "the Content-Length is not one decimal number");
  }
  return { kind: "length", length: Number(lengths[0]) };
}

/** Where a chunked body that starts at `pos` ends: after its last chunk, its trailers and the empty line. */
export function chunkedEnd(view: SeenBytes, pos: number): number {
  for (;;) {
    const line = lineAt(view, pos, "a chunk-size line");
    if (!line) throw new MessageProblem("incomplete", "the chunked body ends before its last chunk");
    if (!view.isSeen(line)) throw new MessageProblem("unseen", "a chunk-size line is hidden");
    const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(text(view, line))?.[1];
    if (size === undefined) throw new MessageProblem("malformed", "a chunk-size line is not a hexadecimal size");
    const length = Number.parseInt(size, 16);
    if (length === 0) return readFields(view, line.next, "the chunked body's trailers").next;
    const dataEnd = line.next + length;
    if (dataEnd + 2 > view.bytes.length) throw new MessageProblem("incomplete", "a chunk is cut short");
    if (!view.isSeen({ start: dataEnd, end: dataEnd + 2 })) throw new MessageProblem("unseen", "the line break after a chunk is hidden");
    if (view.bytes[dataEnd] !== CR || view.bytes[dataEnd + 1] !== LF) throw new MessageProblem("malformed", "a chunk's data is not followed by CRLF");
    pos = dataEnd + 2;
  }
}
