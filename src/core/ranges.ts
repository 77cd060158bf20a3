/** Range algebra over half-open byte ranges [start, end). */
import type { ByteRange, Direction } from "./transcript.ts";

export type RangesByDirection = Record<Direction, ByteRange[]>;

/**
 * The same bytes as sorted, non-overlapping, non-adjacent ranges; empty ranges dropped.
 * Ends merge with max(): a shorter range nested in a longer one must never cut the longer one short
 * (the reference system's `last_end = r.end` un-hid the tail of earlier matches).
 */
export function mergeRanges(ranges: readonly ByteRange[]): ByteRange[] {
  const sorted = ranges
    .filter((r) => r.end > r.start)
    .map((r) => ({ start: r.start, end: r.end }))
    .sort((a, b) => a.start - b.start);
  const merged: ByteRange[] = [];
  for (const range of sorted) {
    const last = merged.at(-1);
    if (last && range.start <= last.end) last.end = Math.max(last.end, range.end);
    else merged.push(range);
  }
  return merged;
}

/** Every byte of [0, length) outside `ranges`, as sorted merged ranges. */
export function complementRanges(length: number, ranges: readonly ByteRange[]): ByteRange[] {
  const gaps: ByteRange[] = [];
  let pos = 0;
  for (const range of mergeRanges(ranges)) {
    if (range.start >= length) break;
    if (range.start > pos) gaps.push({ start: pos, end: range.start });
    pos = Math.max(pos, range.end);
  }
  if (pos < length) gaps.push({ start: pos, end: length });
  return gaps;
}

/** Whether any byte of `range` lies in `merged` (sorted and merged, as mergeRanges returns). */
export function overlapsAny(merged: readonly ByteRange[], range: ByteRange): boolean {
  if (range.end <= range.start) return false;
  // First merged range ending after range.start: the only candidate that can overlap.
  let lo = 0;
  let hi = merged.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (merged[mid]!.end <= range.start) lo = mid + 1;
    else hi = mid;
  }
  const candidate = merged[lo];
  return candidate !== undefined && candidate.start < range.end;
}

/** The bytes of `ranges` outside `removed`, sorted and merged. */
export function subtractRanges(ranges: readonly ByteRange[], removed: readonly ByteRange[]): ByteRange[] {
  const kept = mergeRanges(ranges);
  const end = kept.at(-1)?.end ?? 0;
  const outside = complementRanges(end, removed);
  return mergeRanges(kept.flatMap((r) => outside.flatMap((o) => (o.start < r.end && r.start < o.end ? [{ start: Math.max(r.start, o.start), end: Math.min(r.end, o.end) }] : []))));
}
