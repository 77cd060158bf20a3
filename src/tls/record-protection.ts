/**
 * Opening (and, for TLS 1.3, sealing) protected records, one direction and one key at a time, with the implicit 64-bit sequence number that
 * starts at 0 under each new key (so records can be neither dropped, reordered nor replayed).
 * TLS 1.3 (RFC 8446 §5.2-5.4): nonce = iv XOR sequence number (left-padded to 12 bytes); additional data = the
 * record header; the plaintext ends with the real content type then zero padding.
 * TLS 1.2 (RFC 5246 §6.2.3.3): additional data = sequence number, type, version, plaintext length; the nonce is
 * the 4-byte IV + the record's 8-byte explicit nonce for GCM (RFC 5288), the IV XOR sequence number for
 * ChaCha20-Poly1305 (RFC 7905).
 */
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "../core/errors.ts";
import { TAG_LENGTH, openAead, sealAead } from "./aead.ts";
import type { TrafficKeys } from "./key-schedule.ts";
import { ContentType, type TlsRecord } from "./records.ts";
import type { CipherSuite } from "./suites.ts";
import { malformed, uint16Bytes } from "./wire.ts";

const sequenceBytes = (seq: number): Uint8Array => {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(seq));
  return out;
};

const xorSequence = (iv: Uint8Array, seq: number): Uint8Array => {
  const nonce = iv.slice();
  const s = sequenceBytes(seq);
  for (let i = 0; i < 8; i++) nonce[nonce.length - 8 + i] = (nonce[nonce.length - 8 + i] ?? 0) ^ (s[i] ?? 0);
  return nonce;
};

export interface OpenedRecord {
  /** The real content type (TLS 1.3: the inner type). */
  type: number;
  content: Uint8Array;
}

/** Opens one direction's records under one key, counting sequence numbers. */
export class RecordOpener {
  private seq = 0;
  constructor(
    private readonly suite: CipherSuite,
    private readonly keys: TrafficKeys,
    /** Which key this is, for the error ("the revealed server handshake traffic secret"). */
    private readonly keyName: string,
    /** Which side sent the records ("server"). */
    private readonly sender: string,
  ) {}

  open(record: TlsRecord): OpenedRecord {
    const seq = this.seq;
    const opened = this.tryOpen(record);
    if (!opened) {
      throw new AppError(
        "transcript_invalid",
        `the ${this.sender}'s protected record ${seq} does not authenticate under ${this.keyName}: the key is wrong or the relayed bytes were changed`,
      );
    }
    return opened;
  }

  /** The record opened as the next in sequence, or null (the sequence unmoved) when it does not authenticate. */
  tryOpen(record: TlsRecord): OpenedRecord | null {
    const opened = this.suite.version === "TLS1.3" ? this.open13(record, this.seq) : this.open12(record, this.seq);
    if (opened) this.seq++;
    return opened;
  }

  private open13(record: TlsRecord, seq: number): OpenedRecord | null {
    const inner = openAead(this.suite.aead, this.keys.key, xorSequence(this.keys.iv, seq), record.header, record.fragment);
    if (!inner) return null;
    let end = inner.length;
    while (end > 0 && inner[end - 1] === 0) end--;
    if (end === 0) throw malformed(`the ${this.sender}'s protected record ${seq} has no content type`);
    return { type: inner[end - 1] ?? 0, content: inner.subarray(0, end - 1) };
  }

  private open12(record: TlsRecord, seq: number): OpenedRecord | null {
    const gcm = this.suite.aead !== "chacha20-poly1305";
    const explicitLength = gcm ? 8 : 0;
    const plainLength = record.fragment.length - explicitLength - TAG_LENGTH;
    if (plainLength < 0) return null;
    const nonce = gcm ? concatBytes(this.keys.iv, record.fragment.subarray(0, 8)) : xorSequence(this.keys.iv, seq);
    const aad = concatBytes(sequenceBytes(seq), record.header.subarray(0, 3), uint16Bytes(plainLength));
    const content = openAead(this.suite.aead, this.keys.key, nonce, aad, record.fragment.subarray(explicitLength));
    return content && { type: record.type, content };
  }
}

/** The largest TLS 1.3 inner plaintext a record carries (RFC 8446 §5.1). */
export const MAX_PLAINTEXT = 16384;

/** Seals one direction's TLS 1.3 records under one key, counting sequence numbers from 0. */
export class RecordSealer {
  private seq = 0;
  constructor(
    private readonly suite: CipherSuite,
    private readonly keys: TrafficKeys,
  ) {}

  /** The whole record (header and sealed fragment) carrying `content` of inner type `type`, unpadded. */
  seal(type: number, content: Uint8Array): Uint8Array {
    if (content.length > MAX_PLAINTEXT) throw new AppError("internal", `a TLS record holds at most ${MAX_PLAINTEXT} bytes`);
    const inner = new Uint8Array(content.length + 1);
    inner.set(content);
    inner[content.length] = type;
    const header = Uint8Array.of(ContentType.applicationData, 3, 3, ...uint16Bytes(inner.length + TAG_LENGTH));
    const sealed = sealAead(this.suite.aead, this.keys.key, xorSequence(this.keys.iv, this.seq++), header, inner);
    return concatBytes(header, sealed);
  }
}

/** Bytes of application data a TLS 1.2 record of this fragment length carries. */
export const plaintextLength12 = (suite: CipherSuite, fragmentLength: number): number =>
  fragmentLength - TAG_LENGTH - (suite.aead === "chacha20-poly1305" ? 0 : 8);
