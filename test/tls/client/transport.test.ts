import { expect, test } from "bun:test";
import { PassThrough } from "node:stream";
import { duplexTransport } from "../../../src/tls/client/transport.ts";

/** A Duplex as the client's transport: bytes both ways in order, its end said once however the stream ends. */

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

function started(stream: PassThrough) {
  const transport = duplexTransport(stream);
  const received: Uint8Array[] = [];
  const ends: (Error | undefined)[] = [];
  transport.start(
    (bytes) => received.push(bytes),
    (error) => ends.push(error),
  );
  return { transport, received, ends };
}

test("bytes written reach the stream; bytes it gives arrive in order; end() ends its writing side", async () => {
  const stream = new PassThrough();
  const { transport, received } = started(stream);
  transport.write(Uint8Array.of(1, 2));
  transport.write(Uint8Array.of(3));
  await settle();
  expect(Buffer.concat(received)).toEqual(Buffer.from([1, 2, 3]));
  expect(stream.writableEnded).toBe(false);
  transport.end();
  expect(stream.writableEnded).toBe(true);
});

test("an end with no close after it, a close with no end before it, an error: each said once", async () => {
  const endOnly = new PassThrough({ autoDestroy: false });
  const a = started(endOnly);
  endOnly.end();
  await settle();
  expect(a.ends).toStrictEqual([undefined]);

  const closeOnly = new PassThrough();
  const b = started(closeOnly);
  closeOnly.destroy();
  await settle();
  expect(b.ends).toStrictEqual([undefined]);

  const failing = new PassThrough();
  const c = started(failing);
  failing.destroy(new Error("reset"));
  await settle();
  expect(c.ends).toEqual([new Error("reset")]);
});

test("an end followed by a close is said once", async () => {
  const stream = new PassThrough();
  const { ends } = started(stream);
  stream.end();
  await settle();
  stream.destroy();
  await settle();
  expect(ends).toStrictEqual([undefined]);
});
