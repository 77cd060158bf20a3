/**
 * A verified direction as the HTTP rules read it: a range counts as seen only when one seen range holds all of it;
 * an empty range is seen; a direction none of which was seen reads as no bytes.
 */
import { expect, test } from "bun:test";
import { seenBytes } from "../../src/notary/verified-transcript.ts";

test("a range is seen when one seen range holds it whole, not across a gap, not past an end", () => {
  const view = seenBytes({ length: 12, bytes: new Uint8Array(12), seen: [{ start: 0, end: 5 }, { start: 8, end: 12 }] });
  const seen = (start: number, end: number) => view.isSeen({ start, end });
  expect([seen(0, 5), seen(1, 4), seen(8, 12), seen(9, 11)]).toEqual([true, true, true, true]);
  expect([seen(4, 9), seen(0, 12), seen(5, 8), seen(6, 7), seen(7, 12), seen(8, 13), seen(3, 6)]).toEqual([false, false, false, false, false, false, false]);
  // An empty range holds no byte to hide, wherever it lies.
  expect([seen(6, 6), seen(7, 6)]).toEqual([true, true]);
  expect(view.bytes.length).toBe(12);
});

test("a direction never seen has no bytes, and no range of it is seen but an empty one", () => {
  const view = seenBytes({ length: 40, bytes: null, seen: [] });
  expect(view.bytes).toEqual(new Uint8Array(0));
  expect(view.isSeen({ start: 0, end: 1 })).toBe(false);
  expect(view.isSeen({ start: 3, end: 3 })).toBe(true);
});
