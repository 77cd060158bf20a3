/**
 * TLS wire structures (RFC 8446 §3): big-endian integers and length-prefixed vectors. Any read past the end is a
 * malformed transcript, reported with what was being read.
 */
import { AppError } from "../core/errors.ts";

export class WireReader {
  private offset = 0;
  constructor(
    private readonly bytes: Uint8Array,
    /** What these bytes are, for error messages ("ServerHello"). */
    private readonly what: string,
  ) {}

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  bytesOf(length: number): Uint8Array {
    if (length > this.remaining) throw malformed(`${this.what} is truncated`);
    const out = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  uint(width: 1 | 2 | 3): number {
    let value = 0;
    for (const byte of this.bytesOf(width)) value = value * 256 + byte;
    return value;
  }

  /** A vector with a `width`-byte length prefix. */
  vector(width: 1 | 2 | 3): Uint8Array {
    return this.bytesOf(this.uint(width));
  }

  /** Nothing may follow the structure. */
  end(): void {
    if (this.remaining !== 0) throw malformed(`${this.what} has ${this.remaining} unexpected trailing bytes`);
  }
}

export const malformed = (message: string): AppError => new AppError("transcript_invalid", message);

export const uint16Bytes = (value: number): Uint8Array => Uint8Array.of(value >> 8, value & 0xff);

const uintBytes = (width: 1 | 2 | 3, value: number): Uint8Array =>
  width === 1 ? Uint8Array.of(value) : width === 2 ? uint16Bytes(value) : Uint8Array.of(value >> 16, (value >> 8) & 0xff, value & 0xff);

/** `parts` joined behind a `width`-byte length prefix: a vector as written. */
export function vectorBytes(width: 1 | 2 | 3, ...parts: Uint8Array[]): Uint8Array {
  const length = parts.reduce((n, part) => n + part.length, 0);
  if (length >= 2 ** (8 * width)) throw new AppError("internal", `a TLS vector of ${length} bytes does not fit a ${width}-byte length`);
  const out = new Uint8Array(width + length);
  out.set(uintBytes(width, length));
  let offset = width;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export const hex16 = (value: number): string => `0x${value.toString(16).padStart(4, "0")}`;
