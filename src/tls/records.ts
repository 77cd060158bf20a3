/**
 * The TLS record layer as relayed (RFC 5246 §6.2, RFC 8446 §5.1): each record is a 5-byte header (content type,
 * legacy version, uint16 length) and its fragment. Handshake messages (type, uint24 length, body) may span records
 * and a record may carry several; HandshakeAssembler rebuilds them from fragments in order.
 */
import { AppError } from "../core/errors.ts";
import { malformed, vectorBytes } from "./wire.ts";

export const ContentType = { changeCipherSpec: 20, alert: 21, handshake: 22, applicationData: 23 } as const;

export interface TlsRecord {
  type: number;
  /** The 5-byte header: TLS 1.3's additional data. */
  header: Uint8Array;
  fragment: Uint8Array;
  /** Where the record starts in its direction's bytes. */
  offset: number;
}

/** The largest fragment either version allows (2^14 plus TLS 1.2's 2048 bytes of expansion). */
const MAX_FRAGMENT = 16384 + 2048;

export const RECORD_HEADER_LENGTH = 5;

/** The record whose header starts at `offset`, or null when `stream` ends before the record does. */
export function recordAt(stream: Uint8Array, offset: number, direction: string): TlsRecord | null {
  if (offset + RECORD_HEADER_LENGTH > stream.length) return null;
  const header = stream.subarray(offset, offset + RECORD_HEADER_LENGTH);
  const type = header[0] ?? 0;
  const length = ((header[3] ?? 0) << 8) | (header[4] ?? 0);
  if (type < ContentType.changeCipherSpec || type > ContentType.applicationData || header[1] !== 3) {
    throw malformed(`the ${direction} bytes are not TLS records (bad record header at byte ${offset})`);
  }
  if (length > MAX_FRAGMENT) throw malformed(`the ${direction} bytes hold an oversized record at byte ${offset}`);
  const end = offset + RECORD_HEADER_LENGTH + length;
  return end > stream.length ? null : { type, header, fragment: stream.subarray(offset + RECORD_HEADER_LENGTH, end), offset };
}

/**
 * Records of one direction in order. A final record cut short by the end of the relay is left out (`partialTail`):
 * the relay stopped mid-record, so nobody could have read it.
 */
export function splitRecords(stream: Uint8Array, direction: string): { records: TlsRecord[]; partialTail: boolean } {
  const records: TlsRecord[] = [];
  let offset = 0;
  for (let record = recordAt(stream, offset, direction); record; record = recordAt(stream, offset, direction)) {
    records.push(record);
    offset += RECORD_HEADER_LENGTH + record.fragment.length;
  }
  return { records, partialTail: offset !== stream.length };
}

export interface HandshakeMessage {
  type: number;
  body: Uint8Array;
  /** Header and body: what the transcript hash covers. */
  raw: Uint8Array;
}

export const HandshakeType = {
  helloRequest: 0,
  clientHello: 1,
  serverHello: 2,
  newSessionTicket: 4,
  encryptedExtensions: 8,
  certificate: 11,
  serverKeyExchange: 12,
  certificateRequest: 13,
  serverHelloDone: 14,
  certificateVerify: 15,
  clientKeyExchange: 16,
  finished: 20,
  keyUpdate: 24,
  /** The synthetic message that stands for the first ClientHello in the transcript after a HelloRetryRequest. */
  messageHash: 254,
} as const;

/** A well-formed KeyUpdate: a one-byte body, 0 (update_not_requested) or 1 (update_requested). */
export const isKeyUpdate = (message: HandshakeMessage): boolean =>
  message.type === HandshakeType.keyUpdate && message.body.length === 1 && (message.body[0] ?? 2) <= 1;

/** A handshake message as written: type, uint24 length, body. */
export const handshakeMessage = (type: number, body: Uint8Array): Uint8Array => {
  const framed = vectorBytes(3, body);
  const out = new Uint8Array(1 + framed.length);
  out[0] = type;
  out.set(framed, 1);
  return out;
};

/** Rebuilds handshake messages from record fragments, in order. */
export class HandshakeAssembler {
  private pending = new Uint8Array(0);

  push(fragment: Uint8Array): void {
    const joined = new Uint8Array(this.pending.length + fragment.length);
    joined.set(this.pending);
    joined.set(fragment, this.pending.length);
    this.pending = joined;
  }

  /** The next whole message, or null when more fragments are needed. */
  next(): HandshakeMessage | null {
    if (this.pending.length < 4) return null;
    const length = ((this.pending[1] ?? 0) << 16) | ((this.pending[2] ?? 0) << 8) | (this.pending[3] ?? 0);
    if (this.pending.length < 4 + length) return null;
    const raw = this.pending.slice(0, 4 + length);
    this.pending = this.pending.slice(4 + length);
    return { type: raw[0] ?? 0, body: raw.subarray(4), raw };
  }

  /** True when no partial message waits: where a key change may happen. */
  get empty(): boolean {
    return this.pending.length === 0;
  }
}

/** A one-byte ChangeCipherSpec record's fragment must be exactly 0x01. */
export function checkChangeCipherSpec(record: TlsRecord, direction: string): void {
  if (record.fragment.length !== 1 || record.fragment[0] !== 1) throw malformed(`the ${direction} sent a malformed ChangeCipherSpec`);
}

/** One direction's records, read front to back. */
export class RecordStream {
  private index = 0;
  constructor(
    private readonly records: readonly TlsRecord[],
    /** "server" or "client", for error messages. */
    readonly sender: string,
  ) {}

  peek(): TlsRecord | undefined {
    return this.records[this.index];
  }

  /** How many records are left to take. */
  get remaining(): number {
    return this.records.length - this.index;
  }

  take(): TlsRecord | undefined {
    return this.records[this.index++];
  }
}

/** The alert descriptions a peer is likely to send (RFC 8446 §6), by code. */
const ALERT_NAMES: Readonly<Record<number, string>> = {
  0: "close_notify",
  10: "unexpected_message",
  20: "bad_record_mac",
  40: "handshake_failure",
  42: "bad_certificate",
  47: "illegal_parameter",
  50: "decode_error",
  51: "decrypt_error",
  70: "protocol_version",
  80: "internal_error",
  90: "user_canceled",
  109: "missing_extension",
  110: "unsupported_extension",
  112: "unrecognized_name",
  120: "no_application_protocol",
};

/** "alert 40 (handshake_failure)", for messages. */
export const alertName = (content: Uint8Array): string => {
  const code = content[1] ?? 0;
  return `alert ${code}${ALERT_NAMES[code] ? ` (${ALERT_NAMES[code]})` : ""}`;
};

/** An alert the peer sent (level, description): only close_notify may end a session that is proven. */
export function alertError(sender: string, content: Uint8Array): AppError {
  return content.length === 2
    ? new AppError("transcript_invalid", `the ${sender} sent TLS ${alertName(content)} at level ${content[0]}: the session did not complete normally`)
    : malformed(`the ${sender} sent a malformed alert`);
}

export const isCloseNotify = (content: Uint8Array): boolean => content.length === 2 && content[1] === 0;

/** Feeds the stream's next record, which must be a clear handshake record, to `assembler`. */
export function takePlainHandshakeRecord(stream: RecordStream, assembler: HandshakeAssembler, expecting: string): void {
  const record = stream.take();
  if (!record) throw malformed(`the ${stream.sender}'s bytes end before its ${expecting}`);
  if (record.type === ContentType.alert) throw alertError(stream.sender, record.fragment);
  if (record.type !== ContentType.handshake) throw malformed(`the ${stream.sender} sent a record of type ${record.type} where its ${expecting} was due`);
  assembler.push(record.fragment);
}

/** The next handshake message sent in clear, reading more handshake records as needed. */
export function nextPlainMessage(stream: RecordStream, assembler: HandshakeAssembler, expecting: string): HandshakeMessage {
  for (let message = assembler.next(); ; message = assembler.next()) {
    if (message) return message;
    takePlainHandshakeRecord(stream, assembler, expecting);
  }
}
