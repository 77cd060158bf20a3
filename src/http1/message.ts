/**
 * HTTP/1.1 message structure from raw transcript bytes, as offsets. Lenient by design: truncated or odd
 * input still yields whatever structure is there, and never throws. Where framing cannot be followed, the
 * remaining bytes count as body, so hiding "the whole body" errs towards hiding more.
 */
import type { ByteRange } from "../core/transcript.ts";

export interface HeaderField {
  name: ByteRange;
  /** The value without surrounding whitespace; empty (start === end) when there is none. */
  value: ByteRange;
}

export interface HttpMessage {
  /** The request or status line, without its line break. */
  startLine: ByteRange;
  /** Field lines of the head, of interim 1xx responses before it, and of chunked trailers. */
  headers: HeaderField[];
  /** Body data in order: one piece, or one per chunk. */
  body: ByteRange[];
  /** Chunk-size lines and the line breaks closing chunk data: not part of the message's content. */
  framing: ByteRange[];
}

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const COLON = 0x3a;
const latin1 = new TextDecoder("latin1");

interface Line {
  start: number;
  /** End of the content, before CR LF (or a bare LF). */
  end: number;
  /** Start of the next line. */
  next: number;
}

function readLine(bytes: Uint8Array, pos: number): Line {
  const lf = bytes.indexOf(LF, pos);
  const next = lf < 0 ? bytes.length : lf + 1;
  let end = lf < 0 ? bytes.length : lf;
  if (end > pos && bytes[end - 1] === CR) end--;
  return { start: pos, end, next };
}

const isBlank = (b: number | undefined) => b === SP || b === HTAB;

function trimmed(bytes: Uint8Array, start: number, end: number): ByteRange {
  while (start < end && isBlank(bytes[start])) start++;
  while (end > start && isBlank(bytes[end - 1])) end--;
  return { start, end };
}

/** The offset of the line's first colon, or -1: a loop, where a view's indexOf would cost an object per line. */
function colonIn(bytes: Uint8Array, line: Line): number {
  for (let i = line.start; i < line.end; i++) if (bytes[i] === COLON) return i;
  return -1;
}

/** Field lines up to and including the empty line that ends them (or the end of input). */
function readFields(bytes: Uint8Array, pos: number): { fields: HeaderField[]; next: number } {
  const fields: HeaderField[] = [];
  while (pos < bytes.length) {
    const line = readLine(bytes, pos);
    pos = line.next;
    if (line.end === line.start) break;
    const previous = fields.at(-1);
    if (isBlank(bytes[line.start]) && previous) {
      // Obsolete line folding: the line continues the previous value, which then spans both lines.
      const more = trimmed(bytes, line.start, line.end);
      if (more.end > more.start) {
        if (previous.value.end === previous.value.start) previous.value = more;
        else previous.value = { start: previous.value.start, end: more.end };
      }
      continue;
    }
    const colon = colonIn(bytes, line);
    if (colon < 0) continue; // not a field line: nothing names it
    fields.push({
      name: trimmed(bytes, line.start, colon),
      value: trimmed(bytes, colon + 1, line.end),
    });
  }
  return { fields, next: pos };
}

const text = (bytes: Uint8Array, range: ByteRange) => latin1.decode(bytes.subarray(range.start, range.end));

/**
 * Whether the bytes in `range` spell `lowerName` (one char per byte, its ASCII letters lower case) in any ASCII case,
 * compared byte by byte: a message is searched for a field name several times, and decoding every name to compare it
 * costs more than the rest of the parse.
 */
export function isFieldName(bytes: Uint8Array, range: ByteRange, lowerName: string): boolean {
  if (range.end - range.start !== lowerName.length) return false;
  for (let i = 0; i < lowerName.length; i++) {
    const b = bytes[range.start + i]!;
    // ASCII letters only are folded, as toLowerCase folds a latin1 name's ASCII letters: 'A'..'Z' to 'a'..'z'.
    if ((b >= 0x41 && b <= 0x5a ? b + 0x20 : b) !== lowerName.charCodeAt(i)) return false;
  }
  return true;
}

/** `text` with its ASCII letters lower-cased and nothing else: the name `isFieldName` expects, for a name of any bytes. */
export function lowerAsciiLetters(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/** Comma-separated list items of every field with this (lower-case) name, trimmed and lower-cased. */
export function listValues(bytes: Uint8Array, fields: readonly HeaderField[], name: string): string[] {
  return fields
    .filter((field) => isFieldName(bytes, field.name, name))
    .flatMap((field) => text(bytes, field.value).split(","))
    .map((item) => item.trim().toLowerCase());
}

type Framing = { kind: "chunked" } | { kind: "length"; length: number } | { kind: "close" };

function framingOf(bytes: Uint8Array, fields: readonly HeaderField[]): Framing {
  const codings = listValues(bytes, fields, "transfer-encoding").filter((c) => c !== "");
  if (codings.length > 0) return codings.at(-1) === "chunked" ? { kind: "chunked" } : { kind: "close" };
  const lengths = listValues(bytes, fields, "content-length");
  // Conflicting or malformed lengths: read until close rather than guess.
  if (lengths.length === 0 || lengths.some((l) => !/^[0-9]+$/.test(l) || l !== lengths[0])) return { kind: "close" };
  return { kind: "length", length: Number(lengths[0]) };
}

/** A chunk-size line's size, or null when the line is not one (hex digits, then nothing or extensions). */
function chunkSize(bytes: Uint8Array, line: Line): number | null {
  const match = /^([0-9a-fA-F]+)[ \t]*(;.*)?$/.exec(text(bytes, line));
  return match ? Number.parseInt(match[1]!, 16) : null;
}

function lineBreakEnd(bytes: Uint8Array, pos: number): number {
  if (bytes[pos] === CR) return bytes[pos + 1] === LF ? pos + 2 : pos + 1;
  return bytes[pos] === LF ? pos + 1 : pos;
}

function readChunked(bytes: Uint8Array, pos: number): Pick<HttpMessage, "body" | "framing"> & { trailers: HeaderField[]; ended: boolean } {
  const body: ByteRange[] = [];
  const framing: ByteRange[] = [];
  let trailers: HeaderField[] = [];
  let ended = false;
  while (pos < bytes.length) {
    const line = readLine(bytes, pos);
    const size = chunkSize(bytes, line);
    if (size === null) {
      body.push({ start: pos, end: bytes.length });
      break;
    }
    framing.push({ start: pos, end: line.next });
    if (size === 0) {
      trailers = readFields(bytes, line.next).fields;
      ended = true;
      break;
    }
    const dataEnd = Math.min(line.next + size, bytes.length);
    body.push({ start: line.next, end: dataEnd });
    pos = lineBreakEnd(bytes, dataEnd);
    if (pos > dataEnd) framing.push({ start: dataEnd, end: pos });
  }
  return { body: body.filter((r) => r.end > r.start), framing, trailers, ended };
}

/** Interim responses (1xx except 101 Switching Protocols) are followed by another head. */
const isInterimStatus = (line: string) => /^HTTP\/\d\.\d 1\d\d(?: |$)/.test(line) && !line.startsWith("101", 9);

export function parseHttpMessage(bytes: Uint8Array): HttpMessage {
  return parse(bytes).message;
}

/**
 * False when the message's own framing says more was to come: a Content-Length body or a chunked body cut short, or
 * only interim heads (a connection that ended early). A body framed by the connection's end is complete by definition.
 */
export function messageComplete(bytes: Uint8Array): boolean {
  return parse(bytes).complete;
}

/** The head after any interim ones: the status line and fields of the answer itself (the request's own head). */
export interface FinalHead {
  startLine: ByteRange;
  headers: HeaderField[];
}

export function finalHead(bytes: Uint8Array): FinalHead {
  return parse(bytes).final;
}

function parse(bytes: Uint8Array): { message: HttpMessage; complete: boolean; final: FinalHead } {
  let pos = 0;
  while (pos < bytes.length && lineBreakEnd(bytes, pos) > pos) pos = lineBreakEnd(bytes, pos); // stray leading CRLFs
  const first = readLine(bytes, pos);
  const startLine = { start: first.start, end: first.end };
  const headers: HeaderField[] = [];
  let line = first;
  let fields: HeaderField[];
  let interim: boolean;
  for (;;) {
    const head = readFields(bytes, line.next);
    headers.push(...head.fields);
    fields = head.fields;
    pos = head.next;
    interim = isInterimStatus(text(bytes, line));
    if (!interim || pos >= bytes.length) break;
    line = readLine(bytes, pos);
  }
  const final = { startLine: { start: line.start, end: line.end }, headers: fields };
  const framing = framingOf(bytes, fields);
  if (framing.kind === "chunked") {
    const { body, framing: chunkFraming, trailers, ended } = readChunked(bytes, pos);
    return { message: { startLine, headers: [...headers, ...trailers], body, framing: chunkFraming }, complete: ended, final };
  }
  const end = framing.kind === "length" ? Math.min(pos + framing.length, bytes.length) : bytes.length;
  // An interim head the input ended after: the answer itself never came.
  const complete = !interim && (framing.kind !== "length" || pos + framing.length <= bytes.length);
  return { message: { startLine, headers, body: end > pos ? [{ start: pos, end }] : [], framing: [] }, complete, final };
}

/** The message's body content in order, de-chunked: what an HTTP client hands to its caller. */
export function bodyBytes(bytes: Uint8Array, message: HttpMessage = parseHttpMessage(bytes)): Uint8Array {
  // One piece (a Content-Length or close-delimited body): a view, not a copy.
  if (message.body.length === 1) return bytes.subarray(message.body[0]!.start, message.body[0]!.end);
  const out = new Uint8Array(message.body.reduce((n, r) => n + r.end - r.start, 0));
  let offset = 0;
  for (const piece of message.body) {
    out.set(bytes.subarray(piece.start, piece.end), offset);
    offset += piece.end - piece.start;
  }
  return out;
}
