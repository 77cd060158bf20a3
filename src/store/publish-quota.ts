/**
 * What publishing may cost, bounded where anyone may publish (API keys off, the default): each caller (its API key,
 * or its address) at most `callerBytesPerMinute` bytes of messages in any minute, and each stream at most
 * `streamBytes` bytes stored. A stream's size is read from the store when first needed and again once it is a
 * minute old (retention deletes, and provers sharing a PostgreSQL store add), and counted up by this prover's own
 * publishes in between. The proofs stream is the prover's own and bounded by retention alone.
 */
import { AppError } from "../core/errors.ts";

export interface PublishQuotaLimits {
  callerBytesPerMinute: number;
  streamBytes: number;
}

const MINUTE_MS = 60_000;
const FORGET_ABOVE = 10_000;

/** Bytes a caller published, by when. */
type Spent = { atMs: number; bytes: number }[];

export class PublishQuota {
  private readonly spent = new Map<string, Spent>();
  private readonly streams = new Map<string, { bytes: number; readAtMs: number }>();

  constructor(
    private readonly limits: PublishQuotaLimits,
    private readonly storedBytes: (streamId: string) => Promise<number>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Refuses (quota_exceeded, 429) a publish of `bytes` the caller or the stream has no room for; else counts it. */
  async admit(caller: string, streamId: string, bytes: number): Promise<void> {
    const now = this.now();
    this.forgetOld(now);
    const recent = (this.spent.get(caller) ?? []).filter((entry) => entry.atMs > now - MINUTE_MS);
    const inMinute = recent.reduce((sum, entry) => sum + entry.bytes, 0);
    if (inMinute + bytes > this.limits.callerBytesPerMinute) {
      this.keep(caller, recent);
      throw new AppError("quota_exceeded", `this caller published ${inMinute} bytes in the last minute; at most ${this.limits.callerBytesPerMinute} (PROVER_STORE_PUBLISH_BYTES_PER_MIN)`);
    }
    const stream = await this.streamSize(streamId, now);
    if (stream.bytes + bytes > this.limits.streamBytes) {
      throw new AppError("quota_exceeded", `stream ${streamId} holds ${stream.bytes} bytes; at most ${this.limits.streamBytes} (PROVER_STORE_STREAM_BYTES)`);
    }
    stream.bytes += bytes;
    this.keep(caller, [...recent, { atMs: now, bytes }]);
  }

  /** Callers and streams last seen over a minute ago, forgotten once many are remembered (names are the caller's to choose). */
  private forgetOld(now: number): void {
    if (this.spent.size + this.streams.size < FORGET_ABOVE) return;
    for (const [caller, entries] of this.spent) if (entries.every((entry) => entry.atMs <= now - MINUTE_MS)) this.spent.delete(caller);
    for (const [streamId, stream] of this.streams) if (stream.readAtMs <= now - MINUTE_MS) this.streams.delete(streamId);
  }

  private keep(caller: string, recent: Spent): void {
    if (recent.length === 0) this.spent.delete(caller);
    else this.spent.set(caller, recent);
  }

  private async streamSize(streamId: string, now: number): Promise<{ bytes: number; readAtMs: number }> {
    const known = this.streams.get(streamId);
    if (known && known.readAtMs > now - MINUTE_MS) return known;
    const fresh = { bytes: await this.storedBytes(streamId), readAtMs: now };
    this.streams.set(streamId, fresh);
    return fresh;
  }
}
