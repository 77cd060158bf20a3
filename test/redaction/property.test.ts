/**
 * Property: for random transcripts built here with known value positions, and random pattern lists in random
 * order whose locators overlap (searches for header names, JSON keys, query names, markers and the bytes that
 * frame them, beside the patterns those bytes locate), every pattern that matches has no byte of its value
 * revealed, whatever the order; each pattern's spans are the same in every order; the entries that match
 * nothing are reported by position. Every value carries a unique marker `~<id>~` (no other byte is `~`), so
 * the oracle knows exactly where each header, body, query and path value lies.
 */
import { expect, test } from "bun:test";
import fc from "fast-check";
import type { ByteRange, Direction } from "../../src/core/transcript.ts";
import { computeRedactions, parseRedactions, revealedRanges } from "../../src/redaction/index.ts";
import { mergeRanges } from "../../src/core/ranges.ts";
import { utf8 } from "./fixtures/transcript.ts";

// ---- the model: what a transcript holds, before it is written out ----

type Json =
  | { kind: "object"; members: [string, Json][] }
  | { kind: "array"; items: Json[] }
  | { kind: "string"; before: string; after: string; escapes: boolean[] }
  | { kind: "literal"; text: string };

type Body = { kind: "json"; value: Json } | { kind: "text"; before: string; after: string } | { kind: "none" };

interface Side {
  headers: { name: string; before: string; after: string; space: string; trailing: string }[];
  body: Body;
  chunks: number[] | null;
}

interface Model {
  request: Side & {
    segments: { text: string; marked: boolean }[];
    trailingSlash: boolean;
    query: { name: string; value: string | null }[];
  };
  response: Side;
  picks: number[];
}

const noTilde = (s: string) => s.replaceAll("~", "");
const filler = fc.string({ unit: "binary", maxLength: 5 }).map(noTilde);
const headerFiller = fc.stringMatching(/^[!-}]{0,5}$/).map(noTilde);
const keys = ["k0", "k1", "k2", "k3"];

const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({ kind: fc.constant("string" as const), before: filler, after: filler, escapes: fc.array(fc.boolean(), { maxLength: 6 }) }),
    fc.record({
      kind: fc.constant("literal" as const),
      text: fc.oneof(
        fc.constantFrom("true", "false", "null", "0", "-0.5e-7"),
        fc.integer().map(String),
        fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
      ),
    }),
    fc.record({ kind: fc.constant("array" as const), items: fc.array(tie("value"), { maxLength: 3 }) }),
    fc.record({ kind: fc.constant("object" as const), members: fc.array(fc.tuple(fc.constantFrom(...keys), tie("value")), { maxLength: 3 }) }),
  ),
})).value;

const body: fc.Arbitrary<Body> = fc.oneof(
  fc.record({ kind: fc.constant("json" as const), value: json }),
  fc.record({ kind: fc.constant("text" as const), before: filler, after: filler }),
  fc.constant({ kind: "none" as const }),
);

const headerNames = ["X-A", "x-a", "X-Bb", "Cookie", "Authorization"];
const side = {
  headers: fc.array(
    fc.record({
      name: fc.constantFrom(...headerNames),
      before: headerFiller,
      after: headerFiller,
      space: fc.constantFrom("", " ", "\t", "  "),
      trailing: fc.constantFrom("", " ", "\t "),
    }),
    { maxLength: 4 },
  ),
  body,
  chunks: fc.option(fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 8 })),
};

const model: fc.Arbitrary<Model> = fc.record({
  request: fc.record({
    ...side,
    segments: fc.array(fc.record({ text: fc.stringMatching(/^[a-z0-9.%-]{0,3}$/), marked: fc.boolean() }), { maxLength: 4 }),
    trailingSlash: fc.boolean(),
    query: fc.array(fc.record({ name: fc.constantFrom("q", "r", "sig"), value: fc.option(fc.stringMatching(/^[A-Za-z0-9%+]{0,4}$/)) }), { maxLength: 4 }),
  }),
  response: fc.record(side),
  picks: fc.array(fc.nat(), { maxLength: 8 }),
});

// ---- writing a model out, recording where every value lands ----

/** Appends text and reports the byte range it landed on. */
function writer() {
  const parts: Uint8Array[] = [];
  let length = 0;
  return {
    put(text: string | Uint8Array): ByteRange {
      const bytes = typeof text === "string" ? utf8(text) : text;
      parts.push(bytes);
      length += bytes.length;
      return { start: length - bytes.length, end: length };
    },
    get length() {
      return length;
    },
    bytes(): Uint8Array {
      const out = new Uint8Array(length);
      let at = 0;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      return out;
    },
  };
}

type Writer = ReturnType<typeof writer>;

/** Where things landed: ranges are in raw transcript offsets. */
interface Written {
  bytes: Uint8Array;
  headers: { name: string; value: ByteRange }[];
  /** Dotted path of each JSON node, and its range ("" for the root). */
  jsonValues: { path: string; range: ByteRange }[];
  body: ByteRange[];
  segments: ByteRange[];
  query: { name: string; value: ByteRange }[];
  markers: { marker: string; range: ByteRange }[];
}

function escapeJson(text: string, escapes: boolean[]): string {
  let out = "";
  let i = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === '"' || char === "\\") out += `\\${char}`;
    else if (code < 0x20 || escapes[i++ % Math.max(escapes.length, 1)]) {
      // One \uXXXX per UTF-16 code unit: astral characters become surrogate-pair escapes.
      for (let k = 0; k < char.length; k++) out += `\\u${char.charCodeAt(k).toString(16).padStart(4, "0")}`;
    } else out += char;
  }
  return out;
}

function writeSide(s: Side, startLine: string, nextMarker: () => string, target: Omit<Written, "bytes" | "headers" | "jsonValues" | "body">): Written {
  const headers: Written["headers"] = [];
  const jsonValues: Written["jsonValues"] = [];
  const markers = target.markers;
  const w = writer();
  w.put(`${startLine}\r\n`);

  // The body first, in a separate writer (logical offsets); mapped to raw offsets once framing is known.
  const b = writer();
  const bodyMarkers: { marker: string; range: ByteRange }[] = [];
  const marked = (out: Writer, before: string, after: string, escape: (t: string) => string, into: { marker: string; range: ByteRange }[]) => {
    out.put(escape(before));
    const marker = nextMarker();
    into.push({ marker, range: out.put(marker) });
    out.put(escape(after));
  };
  const writeJson = (value: Json, path: string) => {
    const start = b.length;
    if (value.kind === "string") {
      b.put('"');
      marked(b, value.before, value.after, (t) => escapeJson(t, value.escapes), bodyMarkers);
      b.put('"');
    } else if (value.kind === "literal") b.put(value.text);
    else if (value.kind === "array") {
      b.put("[ ");
      value.items.forEach((item, i) => {
        if (i > 0) b.put(",\n");
        writeJson(item, path === "" ? String(i) : `${path}.${i}`);
      });
      b.put("]");
    } else {
      b.put("{");
      value.members.forEach(([key, item], i) => {
        b.put(`${i > 0 ? "," : ""}"${key}"\t: `);
        writeJson(item, path === "" ? key : `${path}.${key}`);
      });
      b.put(" }");
    }
    jsonValues.push({ path, range: { start, end: b.length } });
  };
  if (s.body.kind === "json") writeJson(s.body.value, "");
  if (s.body.kind === "text") marked(b, s.body.before, s.body.after, (t) => t, bodyMarkers);
  const bodyBytes = b.bytes();

  for (const h of s.headers) {
    w.put(`${h.name}:${h.space}`);
    const start = w.length;
    marked(w, h.before, h.after, (t) => t, markers);
    headers.push({ name: h.name, value: { start, end: w.length } });
    w.put(`${h.trailing}\r\n`);
  }

  // Logical body offset -> raw offset, per framing.
  const pieces: { logical: number; raw: number; length: number }[] = [];
  if (s.chunks && bodyBytes.length > 0) {
    w.put("Transfer-Encoding: chunked\r\n\r\n");
    let at = 0;
    for (const size of [...s.chunks, bodyBytes.length]) {
      const n = Math.min(size, bodyBytes.length - at);
      if (n <= 0) break;
      w.put(`${n.toString(16)}${size % 3 === 0 ? ";ext=1" : ""}\r\n`);
      pieces.push({ logical: at, raw: w.put(bodyBytes.subarray(at, at + n)).start, length: n });
      w.put("\r\n");
      at += n;
    }
    w.put("0\r\n\r\n");
  } else {
    if (s.body.kind !== "none") w.put(`Content-Length: ${bodyBytes.length}\r\n`);
    w.put("\r\n");
    if (bodyBytes.length > 0) pieces.push({ logical: 0, raw: w.put(bodyBytes).start, length: bodyBytes.length });
  }
  const toRaw = (r: ByteRange): ByteRange[] =>
    pieces.flatMap((p) => {
      const start = Math.max(r.start, p.logical);
      const end = Math.min(r.end, p.logical + p.length);
      return end > start ? [{ start: start - p.logical + p.raw, end: end - p.logical + p.raw }] : [];
    });
  for (const m of bodyMarkers) for (const range of toRaw(m.range)) markers.push({ marker: m.marker, range });
  return {
    ...target,
    bytes: w.bytes(),
    headers,
    jsonValues: jsonValues.flatMap((v) => toRaw(v.range).map((range) => ({ path: v.path, range }))),
    body: pieces.map((p) => ({ start: p.raw, end: p.raw + p.length })),
  };
}

function writeTranscript(m: Model): Record<Direction, Written> {
  let id = 0;
  const nextMarker = () => `~${id++}~`;
  // The request line is written by hand first to know where segments and parameters land.
  const line = writer();
  line.put("POST ");
  const segments: ByteRange[] = [];
  const markers: Written["markers"] = [];
  for (const seg of m.request.segments) {
    line.put("/");
    const start = line.length;
    if (seg.marked) markers.push({ marker: "", range: line.put(nextMarker()) });
    line.put(seg.text);
    segments.push({ start, end: line.length });
  }
  if (m.request.trailingSlash || m.request.segments.length === 0) {
    line.put("/");
    segments.push({ start: line.length, end: line.length });
  }
  const query: Written["query"] = [];
  m.request.query.forEach((p, i) => {
    line.put(`${i === 0 ? "?" : "&"}${p.name}`);
    if (p.value === null) return query.push({ name: p.name, value: { start: line.length, end: line.length } });
    line.put("=");
    const start = line.length;
    markers.push({ marker: "", range: line.put(nextMarker()) });
    line.put(p.value);
    query.push({ name: p.name, value: { start, end: line.length } });
  });
  line.put(" HTTP/1.1");
  const startLine = new TextDecoder().decode(line.bytes());
  return {
    sent: writeSide(m.request, startLine, nextMarker, { segments, query, markers }),
    recv: writeSide(m.response, "HTTP/1.1 200 OK", nextMarker, { segments: [], query: [], markers: [] }),
  };
}

// ---- the oracle: each pattern's targets, from what was written ----

interface Candidate {
  entry: string;
  direction: Direction;
  targets: ByteRange[];
  /** True when `targets` are all the pattern can hide; a locator search may also hit JSON-escaped copies. */
  exact: boolean;
}

/** Every occurrence of `needle` in the response without chunk framing, as raw ranges. */
function plainOccurrences(recv: Written, needle: string): ByteRange[] {
  const head = recv.body[0]?.start ?? recv.bytes.length;
  const pieces = [{ start: 0, end: head }, ...recv.body];
  const logical = pieces.flatMap((p) => [...recv.bytes.subarray(p.start, p.end)]);
  const toRaw = (at: number): number => {
    for (const p of pieces) {
      if (at < p.end - p.start) return p.start + at;
      at -= p.end - p.start;
    }
    throw new Error("outside the logical response");
  };
  const wanted = [...utf8(needle)];
  const found: ByteRange[] = [];
  for (let at = 0; at + wanted.length <= logical.length; at++) {
    if (wanted.every((b, i) => logical[at + i] === b)) {
      for (let i = 0; i < wanted.length; i++) found.push({ start: toRaw(at + i), end: toRaw(at + i) + 1 });
    }
  }
  return mergeRanges(found);
}

/** Searches whose text is (or crosses) the bytes that locate other patterns' values. */
const locatorSearches = ["X-A", "x-a", "Cookie", "k0", '"k1"', "k2\"", "q=", "sig", "/", "~", "0~", ":~", "HTTP/1.1", "{"];

function candidates(t: Record<Direction, Written>): Candidate[] {
  const out: Candidate[] = [];
  for (const [direction, prefix] of [["sent", "req"], ["recv", "res"]] as const) {
    const side = t[direction];
    for (const name of [...headerNames, "X-Absent"]) {
      const targets = side.headers.filter((h) => h.name.toLowerCase() === name.toLowerCase()).map((h) => h.value);
      out.push({ entry: `${prefix}:header:${name}`, direction, targets, exact: true });
    }
    const paths = new Set([...side.jsonValues.map((v) => v.path), "k9", "k0.5", "0.k1"]);
    for (const path of paths) {
      const targets = path === "" ? side.body : side.jsonValues.filter((v) => v.path === path).map((v) => v.range);
      out.push({ entry: `${prefix}:body:${path}`, direction, targets, exact: true });
    }
    if (!paths.has("")) out.push({ entry: `${prefix}:body:`, direction, targets: side.body, exact: true });
  }
  const sent = t.sent;
  for (const name of ["q", "r", "sig", "zz"]) {
    out.push({ entry: `res:query:${name}`, direction: "sent", targets: sent.query.filter((p) => p.name === name).map((p) => p.value), exact: true });
  }
  for (let n = 1; n <= sent.segments.length + 1; n++) {
    out.push({ entry: `res:path:${n}`, direction: "sent", targets: sent.segments.slice(n - 1, n), exact: true });
  }
  // Search only reaches the response: a request marker is searched for and must not be found there.
  for (const [direction, markers] of [["recv", t.recv.markers], ["sent", t.sent.markers]] as const) {
    for (const m of markers.filter((m) => m.marker !== "")) {
      const targets = direction === "recv" ? markers.filter((o) => o.marker === m.marker).map((o) => o.range) : [];
      out.push({ entry: `search:${m.marker}`, direction: "recv", targets, exact: true });
    }
  }
  for (const text of locatorSearches) {
    out.push({ entry: `search:${text}`, direction: "recv", targets: plainOccurrences(t.recv, text), exact: false });
  }
  return out;
}

const within = (inner: ByteRange, outer: readonly ByteRange[]) => outer.some((o) => o.start <= inner.start && inner.end <= o.end);
const nonEmpty = (ranges: readonly ByteRange[]) => ranges.some((r) => r.end > r.start);

/** The entry as T-REDACTED takes it: commas inside are escaped. */
const written = (entry: string) => entry.replaceAll("\\", "\\\\").replaceAll(",", "\\,");

function run(transcript: Record<Direction, Written>, picked: readonly Candidate[]) {
  const patterns = parseRedactions(picked.map((c) => written(c.entry)).join(", "));
  return computeRedactions({ sent: transcript.sent.bytes, recv: transcript.recv.bytes }, patterns);
}

test("every matching pattern's value is hidden whole, in any order; unmatched entries are reported", () => {
  fc.assert(
    fc.property(model, fc.infiniteStream(fc.nat()), (m, shuffle) => {
      const transcript = writeTranscript(m);
      const all = candidates(transcript);
      const picked = m.picks.map((n) => all[n % all.length]!);
      const result = run(transcript, picked);

      // The same patterns in another order: the same bytes hidden, each pattern the same spans.
      const order = picked.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = shuffle.next().value % (i + 1);
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      const reordered = run(transcript, order.map((i) => picked[i]!));
      expect(reordered.hidden).toEqual(result.hidden);
      order.forEach((from, to) => expect(reordered.declared[to]).toEqual(result.declared[from]));

      const clientEntries = result.declared.slice(0, picked.length);
      expect(result.unmatched).toEqual(clientEntries.flatMap((d, i) => (d.matched ? [] : [i + 1])));
      clientEntries.forEach((d, i) => {
        const c = picked[i]!;
        expect(d.pattern).toBe(c.entry.startsWith("search:") ? "search:*" : c.entry);
        expect(d.matched).toBe(d.spans.length > 0);
        for (const span of d.spans) expect(span.direction).toBe(c.direction);
        const spans = mergeRanges(d.spans);
        // Every byte of every value the pattern names is in its own spans, wherever its locator lies.
        for (const target of c.targets.filter((r) => r.end > r.start)) expect(within(target, spans)).toBe(true);
        if (c.exact) {
          expect(spans).toEqual(mergeRanges(c.targets));
          expect(d.matched).toBe(nonEmpty(c.targets));
        } else if (nonEmpty(c.targets)) expect(d.matched).toBe(true);
      });

      for (const direction of ["sent", "recv"] as const) {
        const hidden = result.hidden[direction];
        // No targeted byte revealed; every hidden byte declared by some entry (client, default or echo).
        for (const c of picked.filter((c) => c.direction === direction)) {
          for (const target of c.targets.filter((r) => r.end > r.start)) expect(within(target, hidden)).toBe(true);
        }
        const declared = mergeRanges(result.declared.flatMap((d) => d.spans.filter((s) => s.direction === direction)));
        expect(declared).toEqual(hidden);

        // Byte by byte: every byte is in exactly one of hidden and revealed.
        const bytes = transcript[direction].bytes;
        const owner = new Uint8Array(bytes.length);
        for (const r of hidden) for (let i = r.start; i < r.end; i++) owner[i]! += 1;
        for (const r of revealedRanges(bytes.length, hidden)) for (let i = r.start; i < r.end; i++) owner[i]! += 2;
        expect(owner.every((o) => o === 1 || o === 2)).toBe(true);

        // Credential headers are hidden unless named: Cookie and Authorization values of the request.
        if (direction === "sent") {
          for (const h of transcript.sent.headers.filter((h) => ["cookie", "authorization"].includes(h.name.toLowerCase()))) {
            expect(within(h.value, hidden) || h.value.start === h.value.end).toBe(true);
          }
        }
      }
    }),
    { numRuns: 5_000 },
  );
  // A few seconds on an idle machine; the bound only keeps a shared, loaded machine from failing it.
}, 300_000);
