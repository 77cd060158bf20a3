import { expect, test } from "bun:test";
import { recordCounter } from "../../../src/notary/proxy-mode/record-count.ts";

const record = (length: number): number[] => [23, 3, 3, length >> 8, length & 0xff, ...new Array<number>(length).fill(0x61)];

test("records are counted as they begin, whatever the chunks: headers and bodies split anywhere, empty records too", () => {
  const stream = Uint8Array.from([...record(0), ...record(300), ...record(1), ...record(16_384)]);
  const whole = recordCounter();
  expect(whole(stream)).toBe(4);
  // Byte by byte, the count grows at each record's first byte and only there.
  const bytewise = recordCounter();
  const counts = [...stream].map((byte) => bytewise(Uint8Array.of(byte)));
  expect(counts[0]).toBe(1);
  expect(counts[5]).toBe(2);
  expect(counts[5 + 5 + 300 - 1]).toBe(2);
  expect(counts[5 + 5 + 300]).toBe(3);
  expect(counts.at(-1)).toBe(4);
  // A body split over two chunks is one record, however far it runs past the first.
  const split = recordCounter();
  expect(split(stream.subarray(5, 105))).toBe(1);
  expect(split(stream.subarray(105, 5 + 305))).toBe(1);
  expect(split(stream.subarray(5 + 305))).toBe(3);
  // Chunks cut inside a header.
  const cut = recordCounter();
  expect(cut(stream.subarray(0, 7))).toBe(2);
  expect(cut(stream.subarray(7, 9))).toBe(2);
  expect(cut(stream.subarray(9))).toBe(4);
});
