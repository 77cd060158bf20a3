/**
 * A strict DER reader (definite, minimal lengths, one-byte tags), for notary keys (src/proof/keys.ts) and X.509
 * extensions (src/tls/certificates.ts). It reports every fault through its caller's `fail`, so each caller throws
 * its own error: a bad key file is a configuration fault, a bad server certificate an untrusted one. And the
 * writer's steps (`derTlv`, `derInteger`, `derOid`), for key files and test certificates (src/engine/test-ca.ts).
 */
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "./errors.ts";

export const DER_TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
  /** [0] IMPLICIT OCTET STRING: an authorityKeyIdentifier's keyIdentifier. */
  keyIdentifier: 0x80,
  /** [2] IMPLICIT IA5String: a GeneralName's dNSName. */
  dnsName: 0x82,
  /** [7] IMPLICIT OCTET STRING: a GeneralName's iPAddress (an address, or in a name constraint an address and mask). */
  ipAddress: 0x87,
  explicit0: 0xa0,
  explicit1: 0xa1,
  explicit3: 0xa3,
  /** [0] and [1] IMPLICIT GeneralSubtrees: a nameConstraints' permittedSubtrees and excludedSubtrees. */
  permittedSubtrees: 0xa0,
  excludedSubtrees: 0xa1,
} as const;

/** One TLV with a definite, minimal length (contents up to 16 MiB). */
export function derTlv(tag: number, ...parts: Uint8Array[]): Uint8Array {
  const content = concatBytes(...parts);
  const n = content.length;
  const length = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : n < 0x10000 ? [0x82, n >> 8, n & 0xff] : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return concatBytes(Uint8Array.of(tag, ...length), content);
}

/**
 * A non-negative INTEGER (X.690 8.3): big-endian, fewest bytes, and a leading 0x00 when the high bit is set, since
 * the encoding is two's complement (0x80 alone is -128).
 */
export function derInteger(value: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0) throw new AppError("internal", `DER INTEGER: not a non-negative safe integer: ${value}`);
  const bytes: number[] = [];
  for (let rest = value; rest > 0 || bytes.length === 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  if (bytes[0]! & 0x80) bytes.unshift(0);
  return derTlv(DER_TAG.integer, Uint8Array.from(bytes));
}

/** An OBJECT IDENTIFIER from dotted text. */
export function derOid(oid: string): Uint8Array {
  const [first = 0, second = 0, ...rest] = oid.split(".").map(Number);
  const out: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const base128: number[] = [];
    for (let value = arc; ; value = Math.floor(value / 128)) {
      base128.unshift((value % 128) | (base128.length > 0 ? 0x80 : 0));
      if (value < 128) break;
    }
    out.push(...base128);
  }
  return derTlv(DER_TAG.oid, Uint8Array.from(out));
}

export interface Tlv {
  tag: number;
  content: Uint8Array;
}

export interface DerReader {
  /** One TLV at `offset`, and the offset after it. */
  tlv(bytes: Uint8Array, offset: number): [Tlv, number];
  /** The TLVs that exactly fill `bytes`. */
  all(bytes: Uint8Array): Tlv[];
  /** The content of `item`, which must have `tag`. */
  expect(item: Tlv | undefined, tag: number, what: string): Uint8Array;
  /** The elements of the single SEQUENCE that makes up `der`. */
  sequence(der: Uint8Array, what: string): Tlv[];
}

/** A reader of `subject`s ("key", "certificate") whose faults are `fail(reason)`. */
export function derReader(subject: string, fail: (reason: string) => Error): DerReader {
  function tlv(bytes: Uint8Array, offset: number): [Tlv, number] {
    const tag = bytes[offset];
    let length = bytes[offset + 1];
    if (tag === undefined || length === undefined) throw fail("malformed DER: truncated");
    if ((tag & 0x1f) === 0x1f) throw fail("malformed DER: unsupported tag");
    let position = offset + 2;
    if (length & 0x80) {
      const lengthBytes = length & 0x7f;
      if (lengthBytes === 0 || lengthBytes > 3 || position + lengthBytes > bytes.length) throw fail("malformed DER: bad length");
      length = 0;
      for (let i = 0; i < lengthBytes; i++) length = length * 256 + (bytes[position++] as number);
      if (length < 0x80 || bytes[offset + 2] === 0) throw fail("malformed DER: non-minimal length");
    }
    if (position + length > bytes.length) throw fail("malformed DER: truncated");
    return [{ tag, content: bytes.subarray(position, position + length) }, position + length];
  }
  function all(bytes: Uint8Array): Tlv[] {
    const items: Tlv[] = [];
    for (let offset = 0; offset < bytes.length; ) {
      const [item, next] = tlv(bytes, offset);
      items.push(item);
      offset = next;
    }
    return items;
  }
  function expect(item: Tlv | undefined, tag: number, what: string): Uint8Array {
    if (!item || item.tag !== tag) throw fail(`malformed ${subject}: expected ${what}`);
    return item.content;
  }
  function sequence(der: Uint8Array, what: string): Tlv[] {
    const [outer, ...rest] = all(der);
    if (rest.length > 0) throw fail(`malformed ${what}: trailing data`);
    return all(expect(outer, DER_TAG.sequence, `${what} SEQUENCE`));
  }
  return { tlv, all, expect, sequence };
}

/** An OBJECT IDENTIFIER's content as dotted text. */
export function decodeOid(content: Uint8Array): string {
  const arcs: number[] = [];
  let value = 0;
  for (const byte of content) {
    value = value * 128 + (byte & 0x7f);
    if (!(byte & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  const [head = 0, ...rest] = arcs;
  const first = Math.min(2, Math.floor(head / 40));
  return [first, head - first * 40, ...rest].join(".");
}
