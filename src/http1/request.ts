/** An HTTP/1.1 request as bytes on the wire: what proxy mode's TLS client sends (the MPC engine writes its own). */
import type { ExchangeRequest } from "../core/exchange.ts";

const encoder = new TextEncoder();

/** Request line, the given headers in order, then a JSON body (with its length and, if none is given, its type). */
export function serializeRequest(request: ExchangeRequest): Uint8Array {
  const body = request.body === undefined ? undefined : encoder.encode(JSON.stringify(request.body));
  const headers = [...request.headers];
  if (body) {
    if (!headers.some(([name]) => name.toLowerCase() === "content-type")) headers.push(["content-type", "application/json"]);
    headers.push(["content-length", String(body.length)]);
  }
  const head = `${request.method} ${request.pathAndQuery} HTTP/1.1\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n`;
  const headBytes = encoder.encode(head);
  if (!body) return headBytes;
  const out = new Uint8Array(headBytes.length + body.length);
  out.set(headBytes);
  out.set(body, headBytes.length);
  return out;
}
