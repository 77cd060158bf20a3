/**
 * Is a proof about the request its reader expects: a method and a URL? The URL's host is the server the certificate
 * proved and the request's Host, its port the one the notary dialled (where the proof names it), its path and query
 * the request target where revealed (an MPC proof may hide path segments or query values: hidden bytes are skipped,
 * the length must match). The notary checked that the request names the server it verified; only the reader knows
 * what was asked. A proof whose request is hidden whole shows the host and port only: its reader accepted that.
 */
import { sameServerName, tlsServerName } from "../core/server-name.ts";
import { isFieldName, parseHttpMessage } from "../http1/message.ts";
import { isHiddenRequest, revealedView } from "./check.ts";
import type { ProofBody, TranscriptDirection } from "./format.ts";

/** What a request must have been, each part optional. */
export interface SentRequest {
  method?: string;
  /** Path and query, as sent. */
  pathAndQuery?: string;
  /** The Host a prover sends: the URL's host, with its port unless it is 443. */
  host?: string;
}

const latin1 = new TextDecoder("latin1");

/** The Host a prover sends for an https URL (src/core/target.ts, hostOf): its name as TLS gives it, no trailing dot. */
export function hostOf(url: URL): string {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const name = tlsServerName(host) ?? host;
  return url.port === "" ? name : `${name}:${url.port}`;
}

/** A Host value's name and its `:port` ("" without one). */
function splitHost(value: string): [string, string] {
  const port = /:[0-9]+$/.exec(value)?.[0] ?? "";
  return [value.slice(0, value.length - port.length), port];
}

/** Whether two Host values name the same port and host, the names compared as server names are (server-name.ts). */
function sameHost(a: string, b: string): boolean {
  const [nameA, portA] = splitHost(a);
  const [nameB, portB] = splitHost(b);
  return portA === portB && sameServerName(nameA, nameB);
}

/** The request a URL and a method name: each part of the request line and the Host. */
export const requestOf = (method: string | undefined, url: URL | undefined): SentRequest => ({
  ...(method === undefined ? {} : { method }),
  ...(url === undefined ? {} : { pathAndQuery: `${url.pathname}${url.search}`, host: hostOf(url) }),
});

/** Why the request line's target is not `pathAndQuery`, or null; hidden bytes are skipped. */
function targetMismatch(bytes: Uint8Array, isShown: (range: { start: number; end: number }) => boolean, target: { start: number; end: number }, pathAndQuery: string): string | null {
  const wanted = new TextEncoder().encode(pathAndQuery);
  if (target.end - target.start !== wanted.length) return `the proof's request target is not the expected ${wanted.length}-byte ${JSON.stringify(pathAndQuery)}`;
  for (let i = 0; i < wanted.length; i++) {
    const at = target.start + i;
    if (isShown({ start: at, end: at + 1 }) && bytes[at] !== wanted[i]) return `the proof's request target differs from the expected ${JSON.stringify(pathAndQuery)} at byte ${i}`;
  }
  return null;
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
  if (expected.method !== undefined && (firstSpace <= 0 || !isShown({ start, end: start + firstSpace }) || method !== expected.method)) {
    return `the proof's request method is ${JSON.stringify(method)}, not the expected ${expected.method}`;
  }
  if (expected.pathAndQuery !== undefined) {
    const mismatch = targetMismatch(bytes, isShown, { start: start + firstSpace + 1, end: start + lastSpace }, expected.pathAndQuery);
    if (mismatch) return mismatch;
  }
  if (expected.host === undefined) return null;
  const hosts = message.headers.filter((field) => isFieldName(bytes, field.name, "host"));
  const host = hosts.length === 1 && isShown(hosts[0]!.value) ? latin1.decode(bytes.subarray(hosts[0]!.value.start, hosts[0]!.value.end)) : undefined;
  if (host === undefined || !sameHost(host, expected.host)) return `the proof's request does not show the one Host ${expected.host} expected`;
  return null;
}

/** Why the proof is not of `method` and `url` (either may be absent), or null. */
export function expectedRequestMismatch(body: ProofBody, method: string | undefined, url: URL | undefined): string | null {
  if (url) {
    const name = url.hostname.replace(/^\[(.*)\]$/, "$1");
    if (!sameServerName(name, body.serverName)) return `the proof is of server ${body.serverName}, not the expected URL's ${name}`;
    const port = Number(url.port || 443);
    if (body.serverPort !== undefined && body.serverPort !== port) return `the proof is of port ${body.serverPort}, not the expected URL's ${port}`;
  }
  if (isHiddenRequest(body)) return null;
  return requestMismatch(body.transcript.sent, requestOf(method, url));
}
