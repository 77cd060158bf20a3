/**
 * How much application data a stream of TLS records carries, counted from record headers alone as the bytes go by
 * (no key needed): each application_data record's fragment, less its fixed per-record overhead. A watcher outside a
 * TLS client (MPC mode's bridge) learns so how much plaintext the server sent, the figure an MPC session's
 * received-data limit bounds. Bytes that are not TLS records stop the count where they begin.
 */
import { ContentType, RECORD_HEADER_LENGTH } from "./records.ts";

/** TLS 1.2 AES-GCM's overhead per record: the 8-byte explicit nonce and the 16-byte tag (MPC mode's one suite). */
export const AES_GCM_TLS12_OVERHEAD = 24;

export class RecordMeter {
  /** Application-data plaintext bytes of the records begun so far (a record counts once its header is read). */
  plaintextBytes = 0;
  private header = new Uint8Array(RECORD_HEADER_LENGTH);
  private headerFilled = 0;
  /** Fragment bytes of the current record still to come. */
  private fragmentLeft = 0;
  private broken = false;

  constructor(private readonly overhead: number) {}

  feed(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length && !this.broken) {
      if (this.fragmentLeft > 0) {
        const take = Math.min(this.fragmentLeft, chunk.length - at);
        this.fragmentLeft -= take;
        at += take;
        continue;
      }
      const take = Math.min(RECORD_HEADER_LENGTH - this.headerFilled, chunk.length - at);
      this.header.set(chunk.subarray(at, at + take), this.headerFilled);
      this.headerFilled += take;
      at += take;
      if (this.headerFilled === RECORD_HEADER_LENGTH) this.headerRead();
    }
  }

  private headerRead(): void {
    const [type = 0, major] = this.header;
    this.headerFilled = 0;
    if (type < ContentType.changeCipherSpec || type > ContentType.applicationData || major !== 3) {
      this.broken = true;
      return;
    }
    this.fragmentLeft = ((this.header[3] ?? 0) << 8) | (this.header[4] ?? 0);
    if (type === ContentType.applicationData) this.plaintextBytes += Math.max(0, this.fragmentLeft - this.overhead);
  }
}
