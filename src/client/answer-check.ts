/**
 * Is the answer a client received the one its proof shows? The proof's recv transcript is the raw HTTP/1.1
 * response; where its bytes are revealed they must be what `/proxy` relayed: the status, every header whose
 * name and value are revealed (less those describing the MPC connection, which the prover drops), and the
 * de-chunked body byte for byte, with the same length. Hidden bytes are skipped: the proof says nothing of them.
 */
import { parseHttpMessage } from "../http1/message.ts";
import { revealedView } from "../proof/check.ts";
import type { TranscriptDirection } from "../proof/format.ts";
import type { TargetResponse } from "./errors.ts";

/** Response headers the prover does not relay (src/prover/call/routes.ts): they describe the MPC connection. */
const UNRELAYED = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "trailer", "upgrade", "te"]);

/** Whether a header value as fetch joins repeated fields (", ") holds `value` as one of them. */
const joinedHolds = (joined: string, value: string): boolean =>
  joined === value || joined.startsWith(`${value}, `) || joined.endsWith(`, ${value}`) || joined.includes(`, ${value}, `);

const ascii = (bytes: Uint8Array): string | null => (bytes.every((b) => b >= 0x20 && b < 0x7f) ? String.fromCharCode(...bytes) : null);

/** Why the received answer is not the one the proof's recv transcript shows, or null when it is. */
export function answerMismatch(recv: TranscriptDirection, response: Pick<TargetResponse, "status" | "headers" | "body">): string | null {
  const { bytes, isShown } = revealedView(recv);
  const message = parseHttpMessage(bytes);

  if (isShown(message.startLine)) {
    const status = /^HTTP\/\d\.\d (\d{3})/.exec(ascii(bytes.subarray(message.startLine.start, message.startLine.end)) ?? "")?.[1];
    if (status !== undefined && Number(status) !== response.status) return `the proof shows status ${status}, the answer received has ${response.status}`;
  }
  for (const field of message.headers) {
    if (!isShown(field.name) || !isShown(field.value)) continue;
    const name = ascii(bytes.subarray(field.name.start, field.name.end))?.toLowerCase();
    const value = ascii(bytes.subarray(field.value.start, field.value.end));
    if (name === undefined || value === null || UNRELAYED.has(name)) continue;
    // Repeated fields arrive joined with ", ": each proven value must be among them.
    if (!joinedHolds(response.headers.get(name) ?? "", value)) {
      return `the proof shows header ${name}: ${value}, the answer received has ${response.headers.has(name) ? "another value" : "none"}`;
    }
  }
  const bodyLength = message.body.reduce((n, piece) => n + piece.end - piece.start, 0);
  if (bodyLength !== response.body.length) return `the proof shows a body of ${bodyLength} bytes, the answer received has ${response.body.length}`;
  let offset = 0;
  for (const piece of message.body) {
    for (let i = piece.start; i < piece.end; i++, offset++) {
      if (bytes[i] !== response.body[offset] && isShown({ start: i, end: i + 1 })) return `the body received differs from the proof's at byte ${offset}`;
    }
  }
  return null;
}
