/**
 * How a serialized HTTP/1.1 request is cut into the parts our TLS 1.3 client writes in epochs (src/tls/client):
 * from the request and its hidden byte ranges (the default-hidden credentials, each `req:*` redaction, their
 * echoes), parts alternating revealed and hidden. The request line and the Host header are the notary's proof of
 * which server was asked: they stay in the first revealed part, so a hidden range that starts before the end of the
 * Host line (a query value, a path segment, a header written before Host) is refused. Overlapping and touching
 * ranges are one hidden part.
 */
import { AppError } from "../core/errors.ts";
import type { ByteRange } from "../core/transcript.ts";
import { mergeRanges } from "../core/ranges.ts";
import type { RequestPart } from "../tls/client/exchange.ts";
import { MAX_CLIENT_EPOCHS } from "../tls/verify-client-epochs.ts";
import { isFieldName, parseHttpMessage } from "./message.ts";

/** A key update before and after each hidden part, within the epochs a connection may hold. */
export const MAX_HIDDEN_PARTS = (MAX_CLIENT_EPOCHS - 1) / 2;

const LF = 0x0a;

/** Where the request's Host line ends (after its line break); refused without exactly one Host header. */
function hostLineEnd(request: Uint8Array): number {
  const message = parseHttpMessage(request);
  const hosts = message.headers.filter((field) => isFieldName(request, field.name, "host"));
  if (hosts.length !== 1) throw new AppError("invalid_header", `the request must carry exactly one Host header to be proven in proxy mode (it has ${hosts.length})`);
  const lineBreak = request.indexOf(LF, hosts[0]!.value.end);
  return lineBreak < 0 ? request.length : lineBreak + 1;
}

/**
 * Refuses hidden ranges (sorted and merged) that start before the end of the request's Host line, or a request without
 * exactly one Host: the request line and Host prove which server was asked.
 */
export function checkHiddenAfterHost(request: Uint8Array, ranges: readonly ByteRange[]): void {
  const revealedUpTo = hostLineEnd(request);
  if (ranges[0] && ranges[0].start < revealedUpTo) {
    throw new AppError(
      "invalid_redaction",
      "the request hides bytes before the end of its Host header (in its request line, such as a query value or path segment, or in a header written before Host); proxy mode reveals the request line and Host to prove which server was asked: hide headers or body values instead, or send T-PROXY-REVEAL: none or use MPC mode",
    );
  }
}

export function requestParts(request: Uint8Array, hidden: readonly ByteRange[]): RequestPart[] {
  const ranges = mergeRanges(hidden);
  if (ranges.some((range) => range.end > request.length)) throw new AppError("internal", "a hidden range lies beyond the end of the request");
  checkHiddenAfterHost(request, ranges);
  if (ranges.length > MAX_HIDDEN_PARTS) {
    throw new AppError("invalid_redaction", `the request hides ${ranges.length} separate values; proxy mode on TLS 1.3 proves at most ${MAX_HIDDEN_PARTS} per request (a key update before and after each)`);
  }
  const parts: RequestPart[] = [];
  let position = 0;
  for (const range of ranges) {
    if (range.start > position) parts.push({ bytes: request.subarray(position, range.start), hidden: false });
    parts.push({ bytes: request.subarray(range.start, range.end), hidden: true });
    position = range.end;
  }
  if (position < request.length || parts.length === 0) parts.push({ bytes: request.subarray(position), hidden: false });
  return parts;
}
