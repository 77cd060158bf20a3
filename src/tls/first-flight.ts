/**
 * What a relay lets through to its target first: the client's opening bytes must be one whole TLS ClientHello
 * (handshake records, handshake type 1) naming the session's server in its server_name extension. Anything else
 * (plain HTTP, another protocol, a ClientHello for another host or for none) is refused before a byte leaves the
 * notary, so a relay only ever carries TLS to the host it was opened for.
 */
import { concatBytes } from "../base/bytes.ts";
import type { AppError } from "../core/errors.ts";
import { parseClientHello } from "./handshake.ts";
import { ContentType, HandshakeAssembler, HandshakeType, splitRecords } from "./records.ts";
import { dottedSniReason } from "./verify-session.ts";

/**
 * Largest opening flight waited for: a ClientHello with post-quantum key shares is about 2 KB; 32 KiB leaves
 * room for any real one, and bounds what a relay buffers before deciding.
 */
export const MAX_FIRST_FLIGHT_BYTES = 32 * 1024;
/** Records a ClientHello may be spread over (clients send one, two with large key shares): each costs a new look. */
export const MAX_FIRST_FLIGHT_RECORDS = 8;

export type FirstFlightVerdict =
  /** `needed`: how many bytes there must be before another look can decide more. */
  | { kind: "incomplete"; needed: number }
  | { kind: "accepted" }
  | { kind: "refused"; reason: string };

const refused = (reason: string): FirstFlightVerdict => ({ kind: "refused", reason });

/** Judges the client's bytes so far (everything it sent, from the first): accepted, refused, or more are needed. */
export function judgeFirstFlight(bytes: Uint8Array, serverName: string): FirstFlightVerdict {
  // Decided from the first byte or the sixth when they are wrong: a relay waits only for what could be a ClientHello.
  if (bytes.length > 0 && bytes[0] !== ContentType.handshake) return refused("the client's first bytes are not a TLS handshake record");
  if (bytes.length > 5 && bytes[5] !== HandshakeType.clientHello) return refused("the client's first handshake message is not a ClientHello");
  let records;
  try {
    records = splitRecords(bytes, "client").records;
  } catch (error) {
    return refused((error as AppError).message);
  }
  const assembler = new HandshakeAssembler();
  let end = 0;
  for (const [index, record] of records.entries()) {
    if (record.type !== ContentType.handshake) return refused("the client's ClientHello is interrupted by a record of another type");
    if (index >= MAX_FIRST_FLIGHT_RECORDS) return refused(`the client's ClientHello is spread over more than ${MAX_FIRST_FLIGHT_RECORDS} records`);
    assembler.push(record.fragment);
    const message = assembler.next();
    if (message) return judgeClientHello(message.body, serverName);
    end += 5 + record.fragment.length;
  }
  if (bytes.length >= MAX_FIRST_FLIGHT_BYTES) return refused(`the client's first ${MAX_FIRST_FLIGHT_BYTES} bytes hold no whole ClientHello`);
  return { kind: "incomplete", needed: Math.max(6, nextRecordEnd(bytes, end)) };
}

/** Where the record starting at `start` ends, or where its header does when that is not whole yet. */
function nextRecordEnd(bytes: Uint8Array, start: number): number {
  if (bytes.length < start + 5) return start + 5;
  return start + 5 + (((bytes[start + 3] ?? 0) << 8) | (bytes[start + 4] ?? 0));
}

function judgeClientHello(body: Uint8Array, serverName: string): FirstFlightVerdict {
  let sni: string | null;
  try {
    sni = parseClientHello(body).serverName;
  } catch (error) {
    return refused((error as AppError).message);
  }
  if (sni === null) return refused(`the ClientHello names no server (no SNI), not ${serverName}`);
  if (sni.endsWith(".")) return refused(dottedSniReason(serverName));
  if (sni.toLowerCase() !== serverName.toLowerCase()) return refused(`the ClientHello names another server than ${serverName}`);
  return { kind: "accepted" };
}

export type OpeningStep = { kind: "incomplete" } | { kind: "refused"; reason: string } | { kind: "accepted"; bytes: Uint8Array };

/** Holds a client's bytes back until they are judged; once accepted, hands over all of them, in order, once. */
export interface OpeningGate {
  push(data: Uint8Array): OpeningStep;
}

/** Looks again only once enough bytes came to decide more: a flight sent a byte at a time costs no more than one whole. */
export function openingGate(serverName: string): OpeningGate {
  let chunks: Uint8Array[] = [];
  let held = 0;
  let needed = 1;
  return {
    push(data) {
      chunks.push(data.slice());
      held += data.length;
      if (held < needed) return { kind: "incomplete" };
      const bytes = chunks.length === 1 ? chunks[0]! : concatBytes(chunks, held);
      chunks = [bytes];
      const verdict = judgeFirstFlight(bytes, serverName);
      if (verdict.kind === "accepted") return { kind: "accepted", bytes };
      if (verdict.kind === "incomplete") needed = Math.min(verdict.needed, MAX_FIRST_FLIGHT_BYTES);
      return verdict.kind === "refused" ? verdict : { kind: "incomplete" };
    },
  };
}

