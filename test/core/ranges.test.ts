import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ByteRange } from "../../src/core/transcript.ts";
import { revealedRanges } from "../../src/redaction/index.ts";
import { complementRanges, mergeRanges, overlapsAny } from "../../src/core/ranges.ts";

const r = (start: number, end: number): ByteRange => ({ start, end });

describe("mergeRanges", () => {
  test("a shorter range starting later inside a longer one does not cut it short", () => {
    // The reference merged with `last_end = r.end`, which would give [0,5) and un-hide 5..10.
    expect(mergeRanges([r(0, 10), r(2, 5)])).toEqual([r(0, 10)]);
    expect(mergeRanges([r(2, 5), r(0, 10)])).toEqual([r(0, 10)]);
    expect(mergeRanges([r(0, 10), r(2, 5), r(4, 7)])).toEqual([r(0, 10)]);
  });

  test("sorts, joins overlapping and adjacent ranges, drops empty ones", () => {
    expect(mergeRanges([r(8, 9), r(0, 2), r(2, 4), r(5, 5), r(3, 6)])).toEqual([r(0, 6), r(8, 9)]);
  });

  test("does not modify its input", () => {
    const input = [r(0, 3), r(1, 5)];
    mergeRanges(input);
    expect(input).toEqual([r(0, 3), r(1, 5)]);
  });
});

describe("revealedRanges", () => {
  test("the complement of hidden within the length", () => {
    expect(revealedRanges(10, [])).toEqual([r(0, 10)]);
    expect(revealedRanges(10, [r(0, 10)])).toEqual([]);
    expect(revealedRanges(10, [r(2, 4), r(0, 1)])).toEqual([r(1, 2), r(4, 10)]);
    expect(revealedRanges(10, [r(0, 10), r(2, 5)])).toEqual([]);
    expect(revealedRanges(5, [r(3, 20)])).toEqual([r(0, 3)]);
    expect(revealedRanges(0, [r(0, 4)])).toEqual([]);
  });

  test("revealed and hidden partition [0, length) for any ranges, in any order", () => {
    const range = fc.tuple(fc.nat(60), fc.nat(20)).map(([start, n]) => r(start, start + n));
    fc.assert(
      fc.property(fc.nat(80), fc.array(range, { maxLength: 12 }), (length, hidden) => {
        const revealed = revealedRanges(length, hidden);
        const isHidden = (i: number) => hidden.some((h) => h.start <= i && i < h.end);
        const isRevealed = (i: number) => revealed.some((v) => v.start <= i && i < v.end);
        for (let i = 0; i < length; i++) expect(isRevealed(i)).toBe(!isHidden(i));
        revealed.forEach((v, i) => i > 0 && expect(revealed[i - 1]!.end).toBeLessThan(v.start));
        expect(complementRanges(length, revealed)).toEqual(mergeRanges(hidden).flatMap((h) => (h.start < length ? [r(h.start, Math.min(h.end, length))] : [])));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("overlapsAny", () => {
  const hidden = mergeRanges([r(2, 4), r(10, 12)]);
  test("touching is not overlapping; empty ranges overlap nothing", () => {
    expect(overlapsAny(hidden, r(0, 2))).toBe(false);
    expect(overlapsAny(hidden, r(4, 10))).toBe(false);
    expect(overlapsAny(hidden, r(3, 3))).toBe(false);
    expect(overlapsAny(hidden, r(3, 5))).toBe(true);
    expect(overlapsAny(hidden, r(0, 20))).toBe(true);
    expect(overlapsAny(hidden, r(11, 12))).toBe(true);
    expect(overlapsAny([], r(0, 5))).toBe(false);
  });
});
