/**
 * Percent-encoding, both ways: the runs of URI characters in a text that hold `%XX` escapes, decoded with
 * where each byte came from (so a match in the decoded text is hidden as the escapes that wrote it), and
 * the decoded form of one value. Any encoder's output is found this way, whatever set of characters it
 * escapes and in whichever case it writes hex digits: every encoder escapes the bytes outside the URI set.
 * `+` is left as it is (a form body's space; see encodings.ts for the needle written that way).
 */
import type { ByteRange } from "../core/transcript.ts";
import type { DecodedString } from "../http1/json.ts";

const PERCENT = 0x25;

/** RFC 3986 unreserved and reserved characters, and `%`: what a percent-encoded text is made of. */
const uriCharacters = new Set(Array.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%", (c) => c.charCodeAt(0)));

function hexValue(b: number | undefined): number {
  if (b === undefined) return -1;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/** The byte `%XX` at `at` stands for, or -1 when there is no escape there. */
function escapedByte(bytes: Uint8Array, at: number, end: number): number {
  if (bytes[at] !== PERCENT || at + 3 > end) return -1;
  const high = hexValue(bytes[at + 1]);
  const low = hexValue(bytes[at + 2]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

/** `bytes[range]` with its `%XX` escapes decoded; sources are offsets in `bytes`. */
function decodeRange(bytes: Uint8Array, range: ByteRange): DecodedString {
  const out: number[] = [];
  const sources: ByteRange[] = [];
  for (let pos = range.start; pos < range.end; ) {
    const byte = escapedByte(bytes, pos, range.end);
    const width = byte < 0 ? 1 : 3;
    out.push(byte < 0 ? bytes[pos]! : byte);
    sources.push({ start: pos, end: pos + width });
    pos += width;
  }
  return { bytes: Uint8Array.from(out), sources };
}

/** Every maximal run of URI characters in `bytes` that holds at least one `%XX` escape, decoded. */
export function percentEncodedRuns(bytes: Uint8Array): DecodedString[] {
  const runs: DecodedString[] = [];
  for (let at = bytes.indexOf(PERCENT); at >= 0; ) {
    let start = at;
    while (start > 0 && uriCharacters.has(bytes[start - 1]!)) start--;
    let end = at;
    while (end < bytes.length && uriCharacters.has(bytes[end]!)) end++;
    const decoded = decodeRange(bytes, { start, end });
    if (decoded.bytes.length < end - start) runs.push(decoded);
    at = bytes.indexOf(PERCENT, end);
  }
  return runs;
}

/** `value` with its `%XX` escapes decoded, or null when it has none. */
export function percentDecoded(value: Uint8Array): Uint8Array | null {
  const decoded = decodeRange(value, { start: 0, end: value.length });
  return decoded.bytes.length === value.length ? null : decoded.bytes;
}
