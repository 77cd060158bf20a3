export interface SseEvent {
  event: string;
  data: string;
}

/** Reads an SSE stream until its first event (comments skipped); rejects on timeout. */
export async function firstEvent(url: string, timeoutMs: number, init: RequestInit = {}): Promise<SseEvent> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
    throw new Error(`not an event stream: ${response.status} ${await response.text()}`);
  }
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error("stream ended without an event");
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = block.split("\n").filter((l) => !l.startsWith(":"));
        if (lines.length === 0) continue;
        const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
        const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        return { event, data };
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
