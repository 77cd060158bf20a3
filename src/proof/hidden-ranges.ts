/**
 * What each hidden range of a verified proof covers, as far as the revealed bytes show: a whole header
 * value, a whole JSON value, a query value, a path segment, the whole body, or none of these. A verifier
 * must not take a range that cuts a value in two for a hidden value (each value is hidden fully or not at
 * all, vlayer's rule): such ranges are reported as not whole.
 *
 * The structure is read from the revealed bytes only. Hidden bytes are stood in for by a neutral filler in
 * the HTTP head and the request target, and by holes in the JSON parse (src/http1/json.ts), so a hidden
 * range can at most be recognised where the visible bytes frame it; what it really holds stays unknown.
 */
import { base64ToBytes } from "../base/bytes.ts";
import { parseHttpMessage } from "../http1/message.ts";
import { type JsonNode, parseJson } from "../http1/json.ts";
import { pathSegments, queryParameters, requestTarget } from "../http1/request-target.ts";
import { type ByteView, viewOf } from "../core/byte-view.ts";
import { complementRanges } from "../core/ranges.ts";
import type { TranscriptDirection } from "./format.ts";
import type { ByteRange, Direction } from "../core/transcript.ts";

export type Coverage =
  | { kind: "header-value"; name: string }
  | { kind: "json-value"; path: string }
  | { kind: "query-value"; name: string }
  | { kind: "path-segment"; segment: number }
  | { kind: "body" }
  | { kind: "not-aligned" };

export interface HiddenRange extends ByteRange {
  direction: Direction;
  covers: Coverage;
  /** False for "not-aligned": the range may cut a value in two. */
  whole: boolean;
}

/** Stands in for hidden bytes in the head and target: no HTTP delimiter, no whitespace. */
const FILLER = 0x78;
const latin1 = new TextDecoder("latin1");

interface Reconstructed {
  bytes: Uint8Array;
  hidden: Uint8Array;
  ranges: ByteRange[];
}

function reconstruct(transcript: TranscriptDirection): Reconstructed {
  const bytes = new Uint8Array(transcript.length).fill(FILLER);
  const hidden = new Uint8Array(transcript.length).fill(1);
  for (const range of transcript.revealed) {
    bytes.set(base64ToBytes(range.data) ?? new Uint8Array(), range.start);
    hidden.fill(0, range.start, range.end);
  }
  return { bytes, hidden, ranges: complementRanges(transcript.length, transcript.revealed) };
}

const segmentText = (key: string | null) => (key === null ? "<hidden key>" : key.replace(/[\\.]/g, (c) => `\\${c}`));

/** JSON value holes (and strings whose whole content is hidden), by view range, with their paths. */
function jsonHoles(root: JsonNode, isHidden: (pos: number) => boolean): Map<string, string> {
  const holes = new Map<string, string>();
  const walk = (node: JsonNode, path: string) => {
    const { start, end } = node.range;
    if (node.kind === "hidden") holes.set(`${start}:${end}`, path);
    if (node.kind === "string" && end - start > 2) {
      let whole = true;
      for (let pos = start + 1; pos < end - 1 && whole; pos++) whole = isHidden(pos);
      if (whole) holes.set(`${start + 1}:${end - 1}`, path);
    }
    if (node.kind === "array") node.items.forEach((item, i) => walk(item, path === "" ? String(i) : `${path}.${i}`));
    if (node.kind === "object") {
      for (const member of node.members) walk(member.value, path === "" ? segmentText(member.key) : `${path}.${segmentText(member.key)}`);
    }
  };
  walk(root, "");
  return holes;
}

/**
 * The maximal hidden runs of the body view, in order, and the one holding the view offset of raw position
 * `raw`: found by binary search (a verifier may be handed tens of thousands of ranges).
 */
function hiddenRunsOf(view: ByteView, hiddenInView: Uint8Array): (raw: number) => ByteRange | null {
  const runs: ByteRange[] = [];
  for (let pos = 0; pos < hiddenInView.length; pos++) {
    if (!hiddenInView[pos]) continue;
    const start = pos;
    while (pos < hiddenInView.length && hiddenInView[pos]) pos++;
    runs.push({ start, end: pos });
  }
  const last = <T>(items: readonly T[], atOrBefore: (item: T) => boolean): T | undefined => {
    let low = 0;
    let high = items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (atOrBefore(items[middle] as T)) low = middle + 1;
      else high = middle;
    }
    return items[low - 1];
  };
  return (raw) => {
    const piece = last(view.pieces, (p) => p.raw.start <= raw);
    if (!piece || raw >= piece.raw.end) return null;
    const at = piece.viewStart + raw - piece.raw.start;
    const run = last(runs, (r) => r.start <= at);
    return run && at < run.end ? run : null;
  };
}

const rangeKey = ({ start, end }: ByteRange): string => `${start}:${end}`;

/** Items by their range's key, the first of each range kept (what a search from the front would find). */
function byRange<T>(items: readonly T[], rangeOf: (item: T) => ByteRange): Map<string, T> {
  const map = new Map<string, T>();
  for (const item of items) {
    const key = rangeKey(rangeOf(item));
    if (!map.has(key)) map.set(key, item);
  }
  return map;
}

function describeDirection(direction: Direction, transcript: TranscriptDirection): HiddenRange[] {
  const { bytes, hidden, ranges } = reconstruct(transcript);
  const message = parseHttpMessage(bytes);
  const nameVisible = (name: ByteRange) => !hidden.subarray(name.start, name.end).includes(1);
  const target = direction === "sent" ? requestTarget(bytes, message.startLine) : null;
  const segments = target ? pathSegments(bytes, target) : [];
  const query = target ? queryParameters(bytes, target) : [];

  const body = viewOf(bytes, message.body);
  const hiddenInView = new Uint8Array(body.bytes.length);
  for (const piece of body.pieces) hiddenInView.set(hidden.subarray(piece.raw.start, piece.raw.end), piece.viewStart);
  const isHidden = (pos: number) => hiddenInView[pos] === 1;
  const json = parseJson(body.bytes, isHidden);
  const holes = json ? jsonHoles(json, isHidden) : new Map<string, string>();
  const runAt = hiddenRunsOf(body, hiddenInView);
  const headers = byRange(message.headers.filter((field) => nameVisible(field.name)), (field) => field.value);
  const segmentNumbers = byRange(segments.map((segment, i) => ({ segment, number: i + 1 })), (s) => s.segment);
  const parameters = byRange(query.filter((parameter) => nameVisible(parameter.name)), (parameter) => parameter.value);

  const coverage = (range: ByteRange): Coverage => {
    const header = headers.get(rangeKey(range));
    if (header) return { kind: "header-value", name: latin1.decode(bytes.subarray(header.name.start, header.name.end)) };
    const segment = segmentNumbers.get(rangeKey(range));
    if (segment) return { kind: "path-segment", segment: segment.number };
    const parameter = parameters.get(rangeKey(range));
    if (parameter) return { kind: "query-value", name: latin1.decode(bytes.subarray(parameter.name.start, parameter.name.end)) };
    const run = runAt(range.start);
    if (run && run.start === 0 && run.end === body.bytes.length) return { kind: "body" };
    const path = run ? holes.get(rangeKey(run)) : undefined;
    if (path !== undefined) return { kind: "json-value", path };
    return { kind: "not-aligned" };
  };
  return ranges.map((range) => {
    const covers = coverage(range);
    return { direction, ...range, covers, whole: covers.kind !== "not-aligned" };
  });
}

export function describeHiddenRanges(transcript: Record<Direction, TranscriptDirection>): HiddenRange[] {
  return [...describeDirection("sent", transcript.sent), ...describeDirection("recv", transcript.recv)];
}

/** One line for people: what the range covers. */
export function coverageText(covers: Coverage): string {
  switch (covers.kind) {
    case "header-value":
      return `the whole value of header ${JSON.stringify(covers.name)}`;
    case "json-value":
      return covers.path === "" ? "the whole JSON body" : `the whole JSON value at ${JSON.stringify(covers.path)}`;
    case "query-value":
      return `the whole value of query parameter ${JSON.stringify(covers.name)}`;
    case "path-segment":
      return `path segment ${covers.segment}`;
    case "body":
      return "the whole body";
    case "not-aligned":
      return "not aligned with any value: it may cut a value in two, showing part of it";
  }
}
