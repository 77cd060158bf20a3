import { expect, test } from "bun:test";
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "../../../src/core/errors.ts";
import { IncomingRecords } from "../../../src/tls/client/incoming.ts";
import { CHANGE_CIPHER_SPEC, RecordWriter, plainRecord } from "../../../src/tls/client/record-writer.ts";
import { scriptedTransport } from "./support.ts";

/** The server's bytes as whole records, however they arrive; the client's records counted and written in one go. */

const one = plainRecord(22, Uint8Array.of(1, 2, 3));
const two = plainRecord(23, new Uint8Array(300).fill(7));

test("records whole whatever the chunks, then null at the end", async () => {
  const scripted = scriptedTransport();
  const incoming = new IncomingRecords(scripted.transport, 1_000);
  const bytes = concatBytes(one, two);
  const first = incoming.next();
  scripted.deliver(bytes.subarray(0, 3));
  scripted.deliver(bytes.subarray(3, 9));
  expect((await first)?.fragment).toEqual(Uint8Array.of(1, 2, 3));
  const second = incoming.next();
  scripted.deliver(bytes.subarray(9));
  expect((await second)?.fragment.length).toBe(300);
  scripted.finish();
  expect(await incoming.next()).toBeNull();
  expect(incoming.failed).toBe(false);
});

test("records already received are read after the end; a failure is remembered", async () => {
  const scripted = scriptedTransport();
  const incoming = new IncomingRecords(scripted.transport, 1_000);
  scripted.deliver(concatBytes(one, two));
  scripted.finish(new Error("reset"));
  expect((await incoming.next())?.type).toBe(22);
  expect((await incoming.next())?.type).toBe(23);
  expect(await incoming.next()).toBeNull();
  expect(incoming.failed).toBe(true);
});

test("the end inside a record; silence longer than allowed", async () => {
  const scripted = scriptedTransport();
  const incoming = new IncomingRecords(scripted.transport, 1_000);
  scripted.deliver(one.subarray(0, 6));
  scripted.finish();
  const failure = (error: unknown) => ({ code: (error as AppError).code, message: (error as AppError).message });
  expect(await incoming.next().catch(failure)).toEqual({ code: "target_request_failed", message: "the target's connection ended inside a TLS record" });
  const silent = new IncomingRecords(scriptedTransport().transport, 20);
  const started = Date.now();
  expect(await silent.next().catch(failure)).toEqual({ code: "target_timeout", message: "the target was silent for 20 ms" });
  expect(Date.now() - started).toBeGreaterThanOrEqual(15);
});

test("a record arriving within the silence allowed, after some waiting", async () => {
  const scripted = scriptedTransport();
  const incoming = new IncomingRecords(scripted.transport, 200);
  const next = incoming.next();
  setTimeout(() => scripted.deliver(one), 50);
  setTimeout(() => scripted.deliver(two), 180);
  expect((await next)?.type).toBe(22);
  // The timer of the first wait is gone: the second waits its own 200 ms.
  expect((await incoming.next())?.type).toBe(23);
});

test("the writer counts records and writes the queued ones at once; nothing when none is queued", () => {
  const scripted = scriptedTransport();
  const writer = new RecordWriter(scripted.transport);
  writer.flush();
  expect(scripted.written).toHaveLength(0);
  writer.queue(one);
  writer.flush();
  writer.queue(CHANGE_CIPHER_SPEC);
  writer.queue(two);
  expect(writer.count).toBe(3);
  writer.flush();
  expect(scripted.written).toEqual([one, concatBytes(CHANGE_CIPHER_SPEC, two)]);
  expect(CHANGE_CIPHER_SPEC).toEqual(Uint8Array.of(20, 3, 3, 0, 1, 1));
});

test("bytes that are not TLS records", async () => {
  const scripted = scriptedTransport();
  const incoming = new IncomingRecords(scripted.transport, 1_000);
  scripted.deliver(new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n"));
  const error = await incoming.next().catch((e: unknown) => e as AppError);
  expect({ code: (error as AppError).code, message: (error as AppError).message }).toEqual({ code: "transcript_invalid", message: "the server bytes are not TLS records (bad record header at byte 0)" });
});
