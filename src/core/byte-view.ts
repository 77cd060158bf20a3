/**
 * A logical byte sequence stitched from pieces of a raw transcript (a de-chunked body, a response without
 * its chunk framing), with the map back to raw offsets: matches are found in the view, hidden in the raw bytes.
 */
import type { ByteRange } from "./transcript.ts";
import { mergeRanges } from "./ranges.ts";

interface ViewPiece {
  viewStart: number;
  raw: ByteRange;
}

export interface ByteView {
  bytes: Uint8Array;
  pieces: ViewPiece[];
}

/** The view of `raw` made of `ranges` in raw order; adjacent ranges join into one piece. */
export function viewOf(raw: Uint8Array, ranges: readonly ByteRange[]): ByteView {
  const pieces: ViewPiece[] = [];
  let length = 0;
  for (const range of mergeRanges(ranges)) {
    const start = Math.min(range.start, raw.length);
    const end = Math.min(range.end, raw.length);
    if (end <= start) continue;
    pieces.push({ viewStart: length, raw: { start, end } });
    length += end - start;
  }
  const bytes = new Uint8Array(length);
  for (const piece of pieces) bytes.set(raw.subarray(piece.raw.start, piece.raw.end), piece.viewStart);
  return { bytes, pieces };
}

/** The raw ranges holding view bytes [start, end): one per piece crossed. */
export function rawRangesOf(view: ByteView, start: number, end: number): ByteRange[] {
  const ranges: ByteRange[] = [];
  // Last piece starting at or before `start`.
  let lo = 0;
  let hi = view.pieces.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (view.pieces[mid]!.viewStart <= start) lo = mid;
    else hi = mid - 1;
  }
  for (let i = lo; i < view.pieces.length && start < end; i++) {
    const piece = view.pieces[i]!;
    const pieceEnd = piece.viewStart + (piece.raw.end - piece.raw.start);
    if (pieceEnd <= start) continue;
    const takeEnd = Math.min(end, pieceEnd);
    const offset = piece.raw.start - piece.viewStart;
    ranges.push({ start: start + offset, end: takeEnd + offset });
    start = takeEnd;
  }
  return ranges;
}
