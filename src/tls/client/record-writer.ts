/**
 * The client's records on the wire, counted: the epochs name their records by position among every record the
 * client sent (hellos, ChangeCipherSpec and handshake flight included), as the notary's relay will see them.
 */
import { concatBytes } from "@noble/hashes/utils.js";
import { ContentType } from "../records.ts";
import { uint16Bytes } from "../wire.ts";
import type { ByteTransport } from "./transport.ts";

/** A record in clear (hellos, ChangeCipherSpec) with the TLS 1.2 legacy record version. */
export const plainRecord = (type: number, fragment: Uint8Array): Uint8Array => concatBytes(Uint8Array.of(type, 3, 3), uint16Bytes(fragment.length), fragment);

/** The one-byte ChangeCipherSpec record of middlebox compatibility mode (RFC 8446 §D.4). */
export const CHANGE_CIPHER_SPEC = plainRecord(ContentType.changeCipherSpec, Uint8Array.of(1));

export class RecordWriter {
  private queued: Uint8Array[] = [];
  /** Records queued so far: the position of the next one. */
  count = 0;

  constructor(private readonly transport: ByteTransport) {}

  queue(record: Uint8Array): void {
    this.queued.push(record);
    this.count++;
  }

  /** Writes the queued records at once. */
  flush(): void {
    if (this.queued.length === 0) return;
    this.transport.write(this.queued.length === 1 ? this.queued[0]! : concatBytes(...this.queued));
    this.queued = [];
  }
}
