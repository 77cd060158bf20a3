/**
 * A small Server-Sent Events reader over a fetch response body (the WHATWG event stream grammar): works the
 * same in Bun, Node and browsers, and, unlike EventSource, lets the caller send headers and never reconnects.
 */

export interface SseEvent {
  /** The event's name; "message" when unnamed (what EventSource.onmessage receives). */
  event: string;
  /** Its `data:` lines joined with "\n". */
  data: string;
  /** The last `id:` field seen on the stream, "" when none. */
  id: string;
}

/** A line's end: CRLF, LF, or a CR not followed by LF (a CR at the end may be the first half of a CRLF still to come). */
const LINE_END = /\r\n|\n|\r(?=[^\n])/g;

/**
 * Events of the stream in order; comment lines and events without data are skipped, as EventSource does, and
 * `onComment` hears each comment (without its colon).
 */
export async function* readSseEvents(body: ReadableStream<Uint8Array>, onComment: (comment: string) => void = () => {}): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  // Text not yet split into lines: `buffer`, which holds no line end before `scanFrom`, then `pending`, chunks with no
  // CR or LF. A megabyte proof arrives as one line in many chunks: each chunk is searched once and the line joined
  // once, where searching and growing one string per chunk took time quadratic in its length.
  let buffer = "";
  let scanFrom = 0;
  let pending: string[] = [];
  let first = true;
  let lastId = "";
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      let text = decoder.decode(value, { stream: true });
      if (first && text.length > 0) {
        text = text.replace(/^\uFEFF/, "");
        first = false;
      }
      if (!/[\r\n]/.test(text)) {
        pending.push(text);
        continue;
      }
      buffer += pending.join("") + text;
      pending = [];
      for (;;) {
        LINE_END.lastIndex = scanFrom;
        const match = LINE_END.exec(buffer);
        if (!match) break;
        const line = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        scanFrom = 0;
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n"), id: lastId };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) {
          onComment(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(fieldValue);
        else if (field === "event") event = fieldValue;
        else if (field === "id" && !fieldValue.includes("\0")) lastId = fieldValue;
      }
      // Only a CR at the very end can still become part of a line end.
      scanFrom = Math.max(0, buffer.length - 1);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
