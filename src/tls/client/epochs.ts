/**
 * The client's application data in epochs (RFC 8446 §4.6.3): the request is written part by part, each part
 * revealed to the notary or hidden from it; a KeyUpdate (update_not_requested) under the old key ends an epoch
 * wherever a hidden part starts or ends, and the next epoch's secret is derived from the old one, its record
 * sequence starting at 0. A request ending hidden is followed by a last KeyUpdate, so that the final epoch (the
 * client's close_notify) is revealed and every hidden epoch ends where a revealed key starts to authenticate.
 * What leaves this module of an epoch is its record key and IV when revealed (never a traffic secret: the key and
 * IV give away neither it nor any other epoch's keys), its records' positions and the request bytes it carried.
 */
import type { ByteRange } from "../../core/transcript.ts";
import { AppError } from "../../core/errors.ts";
import { type TrafficKeys, nextTrafficSecret, trafficKeys } from "../key-schedule.ts";
import { MAX_PLAINTEXT, RecordSealer } from "../record-protection.ts";
import { ContentType, HandshakeType, handshakeMessage } from "../records.ts";
import type { CipherSuite } from "../suites.ts";
import { MAX_CLIENT_EPOCHS } from "../verify-client-epochs.ts";
import type { RecordWriter } from "./record-writer.ts";

/** A piece of the request, revealed to the notary or hidden from it (its length only shows). */
export interface RequestPart {
  bytes: Uint8Array;
  hidden: boolean;
}

/** One client epoch as the prover may show it: a revealed one with its record key and IV. */
export type ClientEpoch = {
  /** Position of its first record among all the client's records on the wire (0: the first ClientHello). */
  firstRecord: number;
  /** How many records it holds, its closing KeyUpdate included. */
  records: number;
  /** The request bytes it carried. */
  sent: ByteRange;
} & ({ revealed: true; keys: TrafficKeys } | { revealed: false });

const UPDATE_NOT_REQUESTED = 0;

interface Epoch {
  revealed: boolean;
  keys: TrafficKeys;
  firstRecord: number;
  records: number;
  sent: ByteRange;
}

/** How many epochs `parts` need: a new one wherever a hidden part starts or ends, and a revealed one to end. */
export function epochCount(parts: readonly RequestPart[]): number {
  let count = 1;
  parts.forEach((part, i) => {
    if (i > 0 && (part.hidden || parts[i - 1]!.hidden)) count++;
  });
  return parts.at(-1)?.hidden ? count + 1 : count;
}

export class EpochWriter {
  private secret: Uint8Array;
  private sealer!: RecordSealer;
  private readonly epochs: Epoch[] = [];
  private sentLength = 0;

  constructor(
    private readonly suite: CipherSuite,
    firstSecret: Uint8Array,
    private readonly writer: RecordWriter,
    firstRevealed: boolean,
  ) {
    this.secret = firstSecret;
    this.begin(firstRevealed);
  }

  private get current(): Epoch {
    return this.epochs.at(-1)!;
  }

  private begin(revealed: boolean): void {
    const keys = trafficKeys(this.suite, this.secret);
    this.sealer = new RecordSealer(this.suite, keys);
    this.epochs.push({ revealed, keys, firstRecord: this.writer.count, records: 0, sent: { start: this.sentLength, end: this.sentLength } });
  }

  private queue(type: number, content: Uint8Array): void {
    this.current.records++;
    this.writer.queue(this.sealer.seal(type, content));
  }

  /** Ends the current epoch with a KeyUpdate and starts the next, revealed or not. */
  keyUpdate(revealedNext: boolean): void {
    if (this.epochs.length >= MAX_CLIENT_EPOCHS) throw new AppError("internal", `a connection holds at most ${MAX_CLIENT_EPOCHS} client epochs`);
    this.queue(ContentType.handshake, handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(UPDATE_NOT_REQUESTED)));
    this.secret = nextTrafficSecret(this.suite.hash, this.secret);
    this.begin(revealedNext);
  }

  private data(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.length; at += MAX_PLAINTEXT) this.queue(ContentType.applicationData, bytes.subarray(at, at + MAX_PLAINTEXT));
    this.sentLength += bytes.length;
    this.current.sent.end = this.sentLength;
  }

  /** Queues the request, part by part (see above); the first epoch's visibility was set to the first part's. */
  writeRequest(parts: readonly RequestPart[]): void {
    if (epochCount(parts) > MAX_CLIENT_EPOCHS) throw new AppError("internal", `the request needs more than ${MAX_CLIENT_EPOCHS} client epochs`);
    parts.forEach((part, i) => {
      if (i > 0 && (part.hidden || parts[i - 1]!.hidden)) this.keyUpdate(!part.hidden);
      this.data(part.bytes);
    });
    if (parts.at(-1)?.hidden) this.keyUpdate(true);
  }

  /** Queues close_notify in the current epoch. */
  closeNotify(): void {
    this.queue(ContentType.alert, Uint8Array.of(1, 0));
  }

  /** Whether the current epoch is revealed (a KeyUpdate the server asks for keeps it so). */
  get revealed(): boolean {
    return this.current.revealed;
  }

  get keyUpdates(): number {
    return this.epochs.length - 1;
  }

  /** The epochs as the prover may show them: keys of the revealed ones only. */
  shown(): ClientEpoch[] {
    return this.epochs.map(({ revealed, keys, firstRecord, records, sent }) => {
      const place = { firstRecord, records, sent: { ...sent } };
      return revealed ? { ...place, revealed: true, keys: { key: keys.key.slice(), iv: keys.iv.slice() } } : { ...place, revealed: false };
    });
  }
}
