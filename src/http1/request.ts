/** An HTTP/1.1 request as bytes on the wire: what proxy mode's TLS client sends (the MPC engine writes its own). */
import type { ExchangeRequest } from "../core/exchange.ts";

const encoder = new TextEncoder();

/**
 * Request line, the given headers in order, then a JSON body (with its length and, if none is given, its type).
 * Headers named in `last` (lower case) come after all others, its own included: a proof reveals no byte after a
 * hidden one (src/proof/request-rule.ts), so headers with hidden values end the head.
 */
export function serializeRequest(request: ExchangeRequest, last: ReadonlySet<string> = new Set()): Uint8Array {
  const body = request.body === undefined ? undefined : encoder.encode(JSON.stringify(request.body));
  const isLast = ([name]: readonly [string, string]) => last.has(name.toLowerCase());
  const headers = request.headers.filter((field) => !isLast(field));
  if (body) {
    if (!request.headers.some(([name]) => name.toLowerCase() === "content-type")) headers.push(["content-type", "application/json"]);
    headers.push(["content-length", String(body.length)]);
  }
  headers.push(...request.headers.filter(isLast));
  const head = `${request.method} ${request.pathAndQuery} HTTP/1.1\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n`;
  const headBytes = encoder.encode(head);
  if (!body) return headBytes;
  const out = new Uint8Array(headBytes.length + body.length);
  out.set(headBytes);
  out.set(body, headBytes.length);
  return out;
}
