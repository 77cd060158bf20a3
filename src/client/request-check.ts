/**
 * Is the request a proof reveals the one this client sent? Its method, its target where revealed (a redaction may
 * hide path segments or query values: hidden bytes are skipped, the length must match), and its Host. The notary
 * checked that the request names the server it verified; only the client knows what it asked.
 */
import { parseHttpMessage } from "../http1/message.ts";
import { revealedView } from "../proof/check.ts";
import type { TranscriptDirection } from "../proof/format.ts";

export interface SentRequest {
  method: string;
  /** Path and query, as sent. */
  pathAndQuery: string;
  /** The Host the prover sends: the URL's host, with its port unless it is 443. */
  host: string;
}

const latin1 = new TextDecoder("latin1");

/** The Host a prover sends for an https URL (src/core/target.ts, hostOf). */
export function hostOf(url: URL): string {
  const name = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return url.port === "" ? name : `${name}:${url.port}`;
}

/** Why the proof's revealed request is not `expected`, or null when it is. */
export function requestMismatch(sent: TranscriptDirection, expected: SentRequest): string | null {
  const { bytes, isShown } = revealedView(sent);
  const message = parseHttpMessage(bytes);
  const { start, end } = message.startLine;
  const line = bytes.subarray(start, end);
  const firstSpace = line.indexOf(0x20);
  const lastSpace = line.lastIndexOf(0x20);
  const method = latin1.decode(line.subarray(0, Math.max(0, firstSpace)));
  if (firstSpace <= 0 || !isShown({ start, end: start + firstSpace }) || method !== expected.method) {
    return `the proof's request method is ${JSON.stringify(method)}, this call sent ${expected.method}`;
  }
  const target = { start: start + firstSpace + 1, end: start + lastSpace };
  const wanted = new TextEncoder().encode(expected.pathAndQuery);
  if (target.end - target.start !== wanted.length) return `the proof's request target is not the ${wanted.length}-byte ${JSON.stringify(expected.pathAndQuery)} this call sent`;
  for (let i = 0; i < wanted.length; i++) {
    const at = target.start + i;
    if (isShown({ start: at, end: at + 1 }) && bytes[at] !== wanted[i]) return `the proof's request target differs from ${JSON.stringify(expected.pathAndQuery)} at byte ${i}`;
  }
  const hosts = message.headers.filter((field) => latin1.decode(bytes.subarray(field.name.start, field.name.end)).toLowerCase() === "host");
  const host = hosts.length === 1 && isShown(hosts[0]!.value) ? latin1.decode(bytes.subarray(hosts[0]!.value.start, hosts[0]!.value.end)) : undefined;
  if (host?.toLowerCase() !== expected.host.toLowerCase()) return `the proof's request does not show the one Host ${expected.host} this call sent`;
  return null;
}
