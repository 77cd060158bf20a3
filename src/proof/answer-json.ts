/**
 * The proven answer as a program reads it (`cli verify --json`'s `answer`): its status, its header fields (a value
 * with any hidden byte is null), and its body: the text (each hidden byte a HIDDEN_BYTE_MARKER, chunk framing left
 * out) and, when that text is JSON, its value, each hidden run of bytes read as a string of markers (a hidden value
 * whole: `"balance":"█████"`). A body that is JSON only but for where it hides part of a value has no `json`.
 */
import { parseHttpMessage } from "../http1/message.ts";
import type { ByteRange } from "../core/transcript.ts";
import { revealedView } from "./check.ts";
import type { TranscriptDirection } from "./format.ts";

export interface AnswerJson {
  /** The status code; null when the status line is hidden or not one. */
  status: number | null;
  /** Each header field in order: a name or value with a hidden byte is null. */
  headers: { name: string | null; value: string | null }[];
  /** The body as text, hidden bytes as markers. */
  bodyText: string;
  /** The body as JSON when it reads as JSON (hidden runs as strings of markers); null otherwise. */
  json: unknown;
}

const utf8 = new TextDecoder("utf-8", { fatal: false });

function parseJson(text: string): { value: unknown } | null {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return null;
  }
}

export function answerJson(recv: TranscriptDirection, marker: string): AnswerJson {
  const { bytes, isShown } = revealedView(recv);
  const message = parseHttpMessage(bytes);
  const text = (range: ByteRange) => (isShown(range) ? utf8.decode(bytes.subarray(range.start, range.end)) : null);
  const status = /^HTTP\/1\.[01] ([0-9]{3})(?: |$)/.exec(text(message.startLine) ?? "")?.[1];
  // Body bytes in order, each run of hidden ones as markers.
  let bodyText = "";
  for (const piece of message.body) {
    for (let at = piece.start; at < piece.end; ) {
      const shown = isShown({ start: at, end: at + 1 });
      let end = at + 1;
      while (end < piece.end && isShown({ start: end, end: end + 1 }) === shown) end++;
      bodyText += shown ? utf8.decode(bytes.subarray(at, end)) : marker.repeat(end - at);
      at = end;
    }
  }
  const runs = new RegExp(`${marker}+`, "g");
  // Markers inside a string read as they are; a run standing for a whole value reads as a string of markers.
  const json = parseJson(bodyText) ?? parseJson(bodyText.replace(runs, (run) => `"${run}"`));
  return {
    status: status === undefined ? null : Number(status),
    headers: message.headers.map((field) => ({ name: text(field.name), value: text(field.value) })),
    bodyText,
    json: json?.value ?? null,
  };
}
