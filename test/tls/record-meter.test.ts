import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { AES_GCM_TLS12_OVERHEAD, RecordMeter } from "../../src/tls/record-meter.ts";

const record = (type: number, length: number) => Uint8Array.from([type, 3, 3, length >> 8, length & 0xff, ...new Uint8Array(length).fill(0xab)]);
const concat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((part) => [...part]));

describe("the record meter", () => {
  test("counts application data less its per-record overhead; handshakes, alerts and CCS count nothing", () => {
    const meter = new RecordMeter(AES_GCM_TLS12_OVERHEAD);
    meter.feed(concat(record(22, 3000), record(20, 1), record(22, 40), record(23, 1024 + 24), record(23, 24), record(21, 26)));
    expect(meter.plaintextBytes).toBe(1024);
  });

  test("the same count however the bytes are cut into chunks", () => {
    const stream = concat(record(22, 500), record(23, 100), record(23, 16384 + 24), record(23, 30));
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 3000 }), { maxLength: 40 }), (cuts) => {
        const meter = new RecordMeter(AES_GCM_TLS12_OVERHEAD);
        let at = 0;
        for (const cut of cuts) {
          meter.feed(stream.subarray(at, at + cut));
          at += cut;
        }
        meter.feed(stream.subarray(at));
        expect(meter.plaintextBytes).toBe(100 - 24 + 16384 + 30 - 24);
      }),
    );
  });

  test("a record counts once its header is read: the limit shows before its fragment has come", () => {
    const meter = new RecordMeter(AES_GCM_TLS12_OVERHEAD);
    meter.feed(record(23, 5000 + 24).subarray(0, 5));
    expect(meter.plaintextBytes).toBe(5000);
  });

  test("bytes that are not TLS records stop the count", () => {
    const meter = new RecordMeter(AES_GCM_TLS12_OVERHEAD);
    meter.feed(concat(record(23, 124), new TextEncoder().encode("HTTP/1.1 200 OK\r\n"), record(23, 1000)));
    expect(meter.plaintextBytes).toBe(100);
  });
});
