import { type SseEvent, readSseEvents } from "../src/client/sse.ts";

export type { SseEvent };

/**
 * Reads an SSE stream with the client's reader; `stopAtFirst`: return after its first event, else read until the
 * server ends it. `onComment` hears each comment line (without its `:`) as it arrives.
 */
async function readEvents(
  url: string,
  timeoutMs: number,
  init: RequestInit,
  stopAtFirst: boolean,
  onComment: (comment: string) => void = () => {},
): Promise<SseEvent[]> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
    throw new Error(`not an event stream: ${response.status} ${await response.text()}`);
  }
  const events: SseEvent[] = [];
  for await (const event of readSseEvents(response.body!, onComment)) {
    events.push(event);
    if (stopAtFirst) return events;
  }
  if (events.length === 0) throw new Error("stream ended without an event");
  return events;
}

/** Reads an SSE stream until its first event (comments skipped); rejects on timeout. */
export async function firstEvent(url: string, timeoutMs: number, init: RequestInit = {}): Promise<SseEvent> {
  const [event] = await readEvents(url, timeoutMs, init, true);
  return event!;
}

/** Every event of an SSE stream, read until the server closes it; rejects on timeout. */
export function allEvents(url: string, timeoutMs: number, init: RequestInit = {}): Promise<SseEvent[]> {
  return readEvents(url, timeoutMs, init, false);
}

/** A subscription the server has taken: its first comment (or event) has arrived. */
export interface OpenStream {
  /** Comment lines so far, in order and without their `:` (`waiting for the proof`, `heartbeat`, ...). */
  comments: string[];
  /** Every event, once the server ends the stream. */
  events: Promise<SseEvent[]>;
}

/** Subscribes and resolves once the server has answered with its first comment: the subscription is registered. */
export async function openStream(url: string, timeoutMs: number, init: RequestInit = {}): Promise<OpenStream> {
  const comments: string[] = [];
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const events = readEvents(url, timeoutMs, init, false, (comment) => {
    comments.push(comment);
    opened();
  });
  await Promise.race([open, events]);
  return { comments, events };
}

/** A proof event split as a client does: `<notary public key PEM>|<proof JSON>`, at the first `|`. */
export interface ProofData {
  publicKey: string;
  proofText: string;
}

/** The parts of a proof event; throws, showing the event, when it is not an unnamed proof event. */
export function proofData(event: SseEvent): ProofData {
  const bar = event.data.indexOf("|");
  if (event.event !== "message" || bar < 0) throw new Error(`not a proof event: ${event.event} ${event.data}`);
  return { publicKey: event.data.slice(0, bar), proofText: event.data.slice(bar + 1) };
}

/** The `{requestId, code, message}` of an `event: error`; throws, showing the event, for any other event. */
export function errorData(event: SseEvent): { requestId: string; code: string; message: string } {
  if (event.event !== "error") throw new Error(`not an error event: ${event.event} ${event.data.slice(0, 200)}`);
  return JSON.parse(event.data) as { requestId: string; code: string; message: string };
}
