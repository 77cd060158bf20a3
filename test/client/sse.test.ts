import { expect, test } from "bun:test";
import { readSseEvents } from "../../src/client/sse.ts";

/** A stream that delivers `text` cut at every one of `cuts` (byte offsets), as a network would. */
function streamOf(text: string, cuts: number[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const edges = [0, ...cuts, bytes.length];
  return new ReadableStream({
    start(controller) {
      for (let i = 1; i < edges.length; i++) controller.enqueue(bytes.slice(edges[i - 1], edges[i]));
      controller.close();
    },
  });
}

async function events(text: string, cuts: number[] = []) {
  const out = [];
  for await (const event of readSseEvents(streamOf(text, cuts))) out.push(event);
  return out;
}

const STREAM =
  "\uFEFF: waiting\r\n\r\nid: 7\r\ndata: -----BEGIN PUBLIC KEY-----\r\ndata:ABC\r\ndata: -----END PUBLIC KEY-----|{\"a\":\"é\"}\r\n\r\n" +
  ": heartbeat\n\nevent: error\ndata: {\"code\":\"x\"}\r\rretry: 10\nevent: ignored-without-data\n\n";

test("reads EventSource's grammar: CRLF, LF and CR line ends, joined data lines, comments, names, ids", async () => {
  expect(await events(STREAM)).toEqual([
    { event: "message", data: '-----BEGIN PUBLIC KEY-----\nABC\n-----END PUBLIC KEY-----|{"a":"é"}', id: "7" },
    { event: "error", data: '{"code":"x"}', id: "7" },
  ]);
});

test("gives the same events whatever the stream's chunk boundaries (inside CRLF, inside a UTF-8 character)", async () => {
  const whole = await events(STREAM);
  const length = new TextEncoder().encode(STREAM).length;
  for (let cut = 1; cut < length; cut++) expect(await events(STREAM, [cut])).toEqual(whole);
});

test("gives the same events when the stream is cut twice anywhere (chunks with no line end between line ends)", async () => {
  const whole = await events(STREAM);
  const length = new TextEncoder().encode(STREAM).length;
  for (let a = 1; a < length; a++) for (let b = a + 1; b < length; b += 3) expect(await events(STREAM, [a, b])).toEqual(whole);
});

test("reads a megabyte data line delivered in kilobyte chunks whole", async () => {
  const proof = `{"data":"${"QUJD".repeat(350_000)}"}`;
  const text = `: waiting\n\nid: 1\ndata: KEY|${proof}\n\n`;
  const cuts = Array.from({ length: Math.floor(text.length / 1024) }, (_, i) => (i + 1) * 1024);
  const [event, ...more] = await events(text, cuts);
  expect(more).toEqual([]);
  expect(event).toEqual({ event: "message", data: `KEY|${proof}`, id: "1" });
});

test("hears each comment line, without its colon, in order", async () => {
  const heard: string[] = [];
  const out = [];
  for await (const event of readSseEvents(streamOf(STREAM, [5, 40]), (comment) => heard.push(comment))) out.push(event.event);
  expect(heard).toEqual(["waiting", "heartbeat"]);
  expect(out).toEqual(["message", "error"]);
});
