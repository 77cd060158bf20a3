/**
 * The server's bytes as whole TLS records, awaited one at a time. The server may go silent for at most
 * `silenceMs` while a record is awaited; its bytes may end between records only.
 */
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "../../core/errors.ts";
import { RECORD_HEADER_LENGTH, type TlsRecord, recordAt } from "../records.ts";
import type { ByteTransport } from "./transport.ts";

export class IncomingRecords {
  private pending: Uint8Array = new Uint8Array(0);
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | null = null;

  constructor(
    transport: ByteTransport,
    private readonly silenceMs: number,
  ) {
    transport.start(
      (bytes) => {
        this.pending = this.pending.length === 0 ? bytes : concatBytes(this.pending, bytes);
        this.wake?.();
      },
      (error) => {
        this.ended = true;
        this.failure = error;
        this.wake?.();
      },
    );
  }

  /** The next whole record, or null when the server's bytes ended (or its connection failed) between records. */
  async next(): Promise<TlsRecord | null> {
    for (;;) {
      const record = recordAt(this.pending, 0, "server");
      if (record) {
        this.pending = this.pending.subarray(RECORD_HEADER_LENGTH + record.fragment.length);
        return record;
      }
      if (this.ended) {
        if (this.pending.length > 0) throw new AppError("target_request_failed", "the target's connection ended inside a TLS record");
        return null;
      }
      await this.arrival();
    }
  }

  /** Whether the server's connection failed (rather than closed). */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Resolves when bytes arrive or the input ends; rejects after `silenceMs` without either. */
  private arrival(): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.wake = null;
        reject(new AppError("target_timeout", `the target was silent for ${this.silenceMs} ms`));
      }, this.silenceMs);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }
}
