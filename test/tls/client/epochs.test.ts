import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "../../../src/core/errors.ts";
import { EpochWriter, type RequestPart, epochCount } from "../../../src/tls/client/epochs.ts";
import { RecordWriter } from "../../../src/tls/client/record-writer.ts";
import { nextTrafficSecret, trafficKeys } from "../../../src/tls/key-schedule.ts";
import { MAX_PLAINTEXT, RecordOpener } from "../../../src/tls/record-protection.ts";
import { ContentType, HandshakeType, handshakeMessage, splitRecords } from "../../../src/tls/records.ts";
import { cipherSuiteOf } from "../../../src/tls/suites.ts";
import { MAX_CLIENT_EPOCHS } from "../../../src/tls/verify-client-epochs.ts";
import { scriptedTransport } from "./support.ts";

/**
 * The request written in epochs, checked on the records written: each epoch under the key derived from the last,
 * its sequence from 0, ended by one KeyUpdate (update_not_requested), the bytes of each part where it says.
 */

const suite = cipherSuiteOf(0x1302, "TLS1.3");
const encoder = new TextEncoder();
const part = (value: string | Uint8Array, hidden = false): RequestPart => ({ bytes: typeof value === "string" ? encoder.encode(value) : value, hidden });

/** Writes `parts` (after `before` records already on the wire) and opens every record with the secrets' chain. */
function written(parts: RequestPart[], before = 3) {
  const scripted = scriptedTransport();
  const writer = new RecordWriter(scripted.transport);
  for (let i = 0; i < before; i++) writer.queue(Uint8Array.of(22, 3, 3, 0, 1, 0));
  writer.flush();
  scripted.written.length = 0;
  const secret = new Uint8Array(randomBytes(48));
  const epochs = new EpochWriter(suite, secret, writer, !parts[0]!.hidden);
  epochs.writeRequest(parts);
  epochs.closeNotify();
  writer.flush();
  const shown = epochs.shown();
  const records = splitRecords(concatBytes(...scripted.written), "client").records;
  let key: Uint8Array = secret;
  let at = 0;
  const opened = shown.map((epoch) => {
    const opener = new RecordOpener(suite, trafficKeys(suite, key), "epoch", "client");
    key = nextTrafficSecret(suite.hash, key);
    const mine = records.slice(at, at + epoch.records).map((record) => opener.open(record));
    at += epoch.records;
    return mine;
  });
  return { epochs, shown, opened, records, secret, writes: scripted.written.length };
}

const keyUpdate = { type: ContentType.handshake, content: handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(0)) };
const dataOf = (value: string) => ({ type: ContentType.applicationData, content: encoder.encode(value) });
const close = { type: ContentType.alert, content: Uint8Array.of(1, 0) };

test("how many epochs: one more wherever a hidden part starts or ends, and a revealed one to end", () => {
  expect(epochCount([part("a")])).toBe(1);
  expect(epochCount([part("a"), part("b")])).toBe(1);
  expect(epochCount([part("a"), part("b", true)])).toBe(3);
  expect(epochCount([part("a", true)])).toBe(2);
  expect(epochCount([part("a"), part("b", true), part("c")])).toBe(3);
  expect(epochCount([part("a", true), part("b", true)])).toBe(3);
  expect(epochCount([])).toBe(1);
});

describe("the records written", () => {
  test("revealed, hidden, revealed: three epochs, each ended by a KeyUpdate but the last, which holds the close_notify", () => {
    const { shown, opened, writes } = written([part("GET / HTTP/1.1\r\nAuthorization: "), part("secret", true), part("\r\n\r\n")]);
    expect(writes).toBe(1);
    expect(opened).toEqual([[dataOf("GET / HTTP/1.1\r\nAuthorization: "), keyUpdate], [dataOf("secret"), keyUpdate], [dataOf("\r\n\r\n"), close]]);
    expect(shown.map(({ firstRecord, records, sent, revealed }) => ({ firstRecord, records, sent, revealed }))).toEqual([
      { firstRecord: 3, records: 2, sent: { start: 0, end: 31 }, revealed: true },
      { firstRecord: 5, records: 2, sent: { start: 31, end: 37 }, revealed: false },
      { firstRecord: 7, records: 2, sent: { start: 37, end: 41 }, revealed: true },
    ]);
    expect("keys" in shown[1]!).toBe(false);
  });

  test("a revealed epoch shows the record key and IV its records open under", () => {
    const { shown, records, secret } = written([part("GET / HTTP/1.1\r\n\r\n")]);
    const [epoch] = shown;
    if (!epoch?.revealed) throw new Error("the one epoch is revealed");
    expect(epoch.keys).toEqual(trafficKeys(suite, secret));
    expect(new RecordOpener(suite, epoch.keys, "shown", "client").open(records[0]!).content).toEqual(encoder.encode("GET / HTTP/1.1\r\n\r\n"));
  });

  test("a request ending hidden gets a last KeyUpdate, so that its final epoch is revealed", () => {
    const { shown, opened } = written([part("a"), part("b", true)]);
    expect(shown.map((e) => e.revealed)).toEqual([true, false, true]);
    expect(opened).toEqual([[dataOf("a"), keyUpdate], [dataOf("b"), keyUpdate], [close]]);
    const startsHidden = written([part("x", true), part("y")]);
    expect(startsHidden.shown.map((e) => e.revealed)).toEqual([false, true]);
  });

  test("adjacent revealed parts share an epoch; a part longer than a record spans records", () => {
    const long = new Uint8Array(MAX_PLAINTEXT + 10).fill(0x41);
    const { shown, opened } = written([part("a"), part(long), part("b")]);
    expect(shown).toHaveLength(1);
    expect(opened[0]!.map((r) => [r.type, r.content.length])).toEqual([
      [23, 1],
      [23, MAX_PLAINTEXT],
      [23, 10],
      [23, 1],
      [21, 2],
    ]);
    expect(shown[0]!.sent).toEqual({ start: 0, end: MAX_PLAINTEXT + 12 });
  });

  test("a part of exactly one record's worth is one record; an empty request writes none", () => {
    const { opened } = written([part(new Uint8Array(MAX_PLAINTEXT).fill(0x42))]);
    expect(opened[0]!.map((r) => [r.type, r.content.length])).toEqual([
      [23, MAX_PLAINTEXT],
      [21, 2],
    ]);
    const scripted = scriptedTransport();
    const writer = new RecordWriter(scripted.transport);
    new EpochWriter(suite, new Uint8Array(48), writer, true).writeRequest([]);
    expect(writer.count).toBe(0);
  });

  test("the shown keys are copies", () => {
    const { epochs } = written([part("a")]);
    const first = epochs.shown()[0]!;
    if (!first.revealed) throw new Error("revealed");
    first.keys.key.fill(0);
    first.keys.iv.fill(0);
    first.sent.end = 99;
    const again = epochs.shown()[0]!;
    expect(again.revealed && again.keys.key.some((byte) => byte !== 0)).toBe(true);
    expect(again.revealed && again.keys.iv.some((byte) => byte !== 0)).toBe(true);
    expect(again.sent.end).toBe(1);
  });
});

test(`at most ${MAX_CLIENT_EPOCHS} epochs per connection`, () => {
  const alternating = (hiddenParts: number) => Array.from({ length: 2 * hiddenParts + 1 }, (_, i) => part(`p${i}`, i % 2 === 1));
  expect(epochCount(alternating(16))).toBe(MAX_CLIENT_EPOCHS);
  expect(written(alternating(16)).shown).toHaveLength(MAX_CLIENT_EPOCHS);
  let caught: unknown;
  try {
    written(alternating(17));
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect({ code: (caught as AppError).code, message: (caught as AppError).message }).toEqual({ code: "internal", message: `the request needs more than ${MAX_CLIENT_EPOCHS} client epochs` });
  // A KeyUpdate the server asks for cannot add one past the limit either.
  const scripted = scriptedTransport();
  const epochs = new EpochWriter(suite, new Uint8Array(48), new RecordWriter(scripted.transport), true);
  epochs.writeRequest(alternating(16));
  expect(epochs.keyUpdates).toBe(MAX_CLIENT_EPOCHS - 1);
  const beyond = (() => {
    try {
      epochs.keyUpdate(true);
    } catch (error) {
      return error as AppError;
    }
  })();
  expect({ code: beyond?.code, message: beyond?.message }).toEqual({ code: "internal", message: `a connection holds at most ${MAX_CLIENT_EPOCHS} client epochs` });
});
