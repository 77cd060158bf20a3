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

/** Events of the stream in order; comment lines and events without data are skipped, as EventSource does. */
export async function* readSseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let first = true;
  let lastId = "";
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      if (first && buffer.length > 0) {
        buffer = buffer.replace(/^\uFEFF/, "");
        first = false;
      }
      // A line ends at CRLF, LF or CR; a lone CR at the end may be the first half of a CRLF still to come.
      let match: RegExpExecArray | null;
      while ((match = /\r\n|\n|\r(?=[^\n])/.exec(buffer))) {
        const line = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        if (line === "") {
          if (data.length > 0) yield { event: event || "message", data: data.join("\n"), id: lastId };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(fieldValue);
        else if (field === "event") event = fieldValue;
        else if (field === "id" && !fieldValue.includes("\0")) lastId = fieldValue;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
