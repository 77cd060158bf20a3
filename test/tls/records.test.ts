import { describe, expect, test } from "bun:test";
import { concatBytes } from "@noble/hashes/utils.js";
import {
  ContentType,
  HandshakeAssembler,
  HandshakeType,
  RecordStream,
  alertError,
  alertName,
  checkChangeCipherSpec,
  handshakeMessage,
  isCloseNotify,
  isKeyUpdate,
  nextPlainMessage,
  recordAt,
  splitRecords,
} from "../../src/tls/records.ts";
import { expectRefusal } from "./support/refusal.ts";

/** The record layer as relayed: headers, fragments, handshake messages across records, alerts. */

const record = (type: number, fragment: Uint8Array, version = 3) => concatBytes(Uint8Array.of(type, version, 3, fragment.length >> 8, fragment.length & 0xff), fragment);

describe("records", () => {
  test("each record's type, header, fragment and offset; a final record cut short is left out", () => {
    const bytes = concatBytes(record(22, Uint8Array.of(1, 2)), record(23, new Uint8Array(300)), record(21, Uint8Array.of(1, 0)));
    const { records, partialTail } = splitRecords(bytes, "server");
    expect(records.map((r) => [r.type, r.offset, r.fragment.length])).toEqual([
      [22, 0, 2],
      [23, 7, 300],
      [21, 312, 2],
    ]);
    expect(records[1]!.header).toEqual(Uint8Array.of(23, 3, 3, 1, 44));
    expect(partialTail).toBe(false);
    for (const cut of [1, 4, 5, 6]) {
      const split = splitRecords(bytes.subarray(0, bytes.length - cut), "server");
      expect(split.records).toHaveLength(2);
      expect(split.partialTail).toBe(true);
    }
    expect(recordAt(bytes, bytes.length - 4, "server")).toBeNull();
    expect(recordAt(bytes, bytes.length - 7, "server")?.fragment).toEqual(Uint8Array.of(1, 0));
  });

  test("a header that is not TLS: a type outside 20-23, a version byte other than 3", () => {
    for (const bad of [record(19, Uint8Array.of(0)), record(24, Uint8Array.of(0)), record(22, Uint8Array.of(0), 2), record(22, Uint8Array.of(0), 4)]) {
      expectRefusal(() => splitRecords(concatBytes(record(20, Uint8Array.of(1)), bad), "client"), "transcript_invalid", /^the client bytes are not TLS records \(bad record header at byte 6\)$/);
    }
    for (const type of [20, 21, 22, 23]) expect(splitRecords(record(type, Uint8Array.of(0)), "client").records).toHaveLength(1);
  });

  test("a fragment of at most 2^14 + 2048 bytes", () => {
    const largest = 16384 + 2048;
    expect(recordAt(record(23, new Uint8Array(largest)), 0, "server")?.fragment.length).toBe(largest);
    const oversized = Uint8Array.of(23, 3, 3, (largest + 1) >> 8, (largest + 1) & 0xff);
    expectRefusal(() => recordAt(oversized, 0, "server"), "transcript_invalid", /^the server bytes hold an oversized record at byte 0$/);
  });

  test("a ChangeCipherSpec is the one byte 1", () => {
    const [ok, two, long] = [Uint8Array.of(1), Uint8Array.of(2), Uint8Array.of(1, 1)].map((f) => recordAt(record(20, f), 0, "client")!);
    expect(() => checkChangeCipherSpec(ok!, "client")).not.toThrow();
    for (const bad of [two!, long!]) expectRefusal(() => checkChangeCipherSpec(bad, "client"), "transcript_invalid", /^the client sent a malformed ChangeCipherSpec$/);
  });

  test("a stream of records read front to back", () => {
    const { records } = splitRecords(concatBytes(record(22, Uint8Array.of(1)), record(23, Uint8Array.of(2))), "server");
    const stream = new RecordStream(records, "server");
    expect(stream.remaining).toBe(2);
    expect(stream.peek()?.type).toBe(22);
    expect(stream.take()?.type).toBe(22);
    expect(stream.remaining).toBe(1);
    expect(stream.take()?.type).toBe(23);
    expect(stream.remaining).toBe(0);
    expect(stream.take()).toBeUndefined();
  });
});

describe("handshake messages", () => {
  test("written with a 3-byte length; rebuilt from fragments however they are cut", () => {
    const first = handshakeMessage(HandshakeType.clientHello, new Uint8Array(300).fill(7));
    expect(first.subarray(0, 4)).toEqual(Uint8Array.of(1, 0, 1, 44));
    const second = handshakeMessage(HandshakeType.finished, Uint8Array.of(9));
    const both = concatBytes(first, second);
    for (const cut of [1, 3, 4, 5, 303, 304, 305]) {
      const assembler = new HandshakeAssembler();
      assembler.push(both.subarray(0, cut));
      expect(assembler.empty).toBe(false);
      if (cut < 304) expect(assembler.next()).toBeNull();
      assembler.push(both.subarray(cut));
      const messages = [assembler.next(), assembler.next()];
      expect(messages.map((m) => [m?.type, m?.body.length])).toEqual([
        [1, 300],
        [20, 1],
      ]);
      expect(messages[0]?.raw).toEqual(first);
      expect(assembler.next()).toBeNull();
      expect(assembler.empty).toBe(true);
    }
  });

  test("a message of more than 64 KiB (a uint24 length)", () => {
    const large = handshakeMessage(HandshakeType.certificate, new Uint8Array(70_000).fill(3));
    expect(large.subarray(0, 4)).toEqual(Uint8Array.of(11, 0x01, 0x11, 0x70));
    const assembler = new HandshakeAssembler();
    for (let at = 0; at < large.length; at += 16_384) {
      expect(assembler.next()).toBeNull();
      assembler.push(large.subarray(at, at + 16_384));
    }
    expect(assembler.next()?.body.length).toBe(70_000);
    expect(assembler.empty).toBe(true);
  });

  test("a KeyUpdate is type 24 with the one byte 0 or 1", () => {
    const message = (type: number, body: number[]) => ({ type, body: Uint8Array.from(body), raw: new Uint8Array(0) });
    expect(isKeyUpdate(message(24, [0]))).toBe(true);
    expect(isKeyUpdate(message(24, [1]))).toBe(true);
    expect(isKeyUpdate(message(24, [2]))).toBe(false);
    expect(isKeyUpdate(message(24, []))).toBe(false);
    expect(isKeyUpdate(message(24, [0, 0]))).toBe(false);
    expect(isKeyUpdate(message(4, [0]))).toBe(false);
  });

  test("the next clear message, across records; the end, an alert, or another record type where it was due", () => {
    const hello = handshakeMessage(HandshakeType.serverHello, new Uint8Array(40));
    const stream = (...records: Uint8Array[]) => new RecordStream(splitRecords(concatBytes(...records), "server").records, "server");
    const message = nextPlainMessage(stream(record(22, hello.subarray(0, 10)), record(22, hello.subarray(10))), new HandshakeAssembler(), "ServerHello");
    expect(message.raw).toEqual(hello);
    expectRefusal(() => nextPlainMessage(stream(record(22, hello.subarray(0, 10))), new HandshakeAssembler(), "ServerHello"), "transcript_invalid", /^the server's bytes end before its ServerHello$/);
    expectRefusal(() => nextPlainMessage(stream(record(21, Uint8Array.of(2, 70))), new HandshakeAssembler(), "ServerHello"), "transcript_invalid", /^the server sent TLS alert 70 \(protocol_version\) at level 2: the session did not complete normally$/);
    expectRefusal(() => nextPlainMessage(stream(record(23, Uint8Array.of(0))), new HandshakeAssembler(), "ServerHello"), "transcript_invalid", /^the server sent a record of type 23 where its ServerHello was due$/);
  });
});

describe("alerts", () => {
  test("named when known, numbered always", () => {
    expect(alertName(Uint8Array.of(2, 40))).toBe("alert 40 (handshake_failure)");
    expect(alertName(Uint8Array.of(2, 0))).toBe("alert 0 (close_notify)");
    expect(alertName(Uint8Array.of(2, 41))).toBe("alert 41");
    const names = [0, 10, 20, 40, 42, 47, 50, 51, 70, 80, 90, 109, 110, 112, 120].map((code) => alertName(Uint8Array.of(2, code)));
    expect(names).toEqual([
      "alert 0 (close_notify)",
      "alert 10 (unexpected_message)",
      "alert 20 (bad_record_mac)",
      "alert 40 (handshake_failure)",
      "alert 42 (bad_certificate)",
      "alert 47 (illegal_parameter)",
      "alert 50 (decode_error)",
      "alert 51 (decrypt_error)",
      "alert 70 (protocol_version)",
      "alert 80 (internal_error)",
      "alert 90 (user_canceled)",
      "alert 109 (missing_extension)",
      "alert 110 (unsupported_extension)",
      "alert 112 (unrecognized_name)",
      "alert 120 (no_application_protocol)",
    ]);
  });

  test("only close_notify is a normal end; an alert of another length is malformed", () => {
    expect(isCloseNotify(Uint8Array.of(1, 0))).toBe(true);
    expect(isCloseNotify(Uint8Array.of(1, 90))).toBe(false);
    expect(isCloseNotify(Uint8Array.of(1, 0, 0))).toBe(false);
    expect(isCloseNotify(Uint8Array.of(0))).toBe(false);
    const error = alertError("client", Uint8Array.of(1, 90));
    expect({ code: error.code, message: error.message }).toEqual({ code: "transcript_invalid", message: "the client sent TLS alert 90 (user_canceled) at level 1: the session did not complete normally" });
    expect(alertError("client", Uint8Array.of(1)).message).toBe("the client sent a malformed alert");
    expect(ContentType).toEqual({ changeCipherSpec: 20, alert: 21, handshake: 22, applicationData: 23 });
  });
});
