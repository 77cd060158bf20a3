/**
 * The client's side of a TLS 1.3 session whose request was written in epochs (client/epochs.ts), as the notary
 * checks it with the record keys of the revealed epochs only. After the hellos come an optional ChangeCipherSpec
 * and one protected record, the client's handshake flight (its Finished, under a secret the notary never sees),
 * then the epochs in order, each `records` records long:
 * - a revealed epoch: every record authenticates under its key and IV, its sequence numbers starting at 0; it holds
 *   application data, and ends with a record holding exactly one KeyUpdate (update_not_requested), the last epoch
 *   excepted, which runs to the end of the relayed bytes and may end with close_notify;
 * - a hidden epoch: its records are counted for length only (each less its tag and inner type byte, the epoch less
 *   its closing KeyUpdate's 5 bytes); it cannot be the last, and where it ends is proven by the next revealed
 *   epoch's key authenticating exactly the record the layout starts that epoch at.
 * The request comes out with hidden bytes zeroed, and its hidden spans (adjacent hidden epochs make one span). Where
 * the client's data and close_notify lay is said only when no epoch is hidden: a hidden epoch's records could hold
 * an alert (a close_notify asking the server to close early) that nobody but the server can read.
 */
import type { ByteRange } from "../core/transcript.ts";
import { mergeRanges } from "../core/ranges.ts";
import { TAG_LENGTH } from "./aead.ts";
import type { TrafficKeys } from "./key-schedule.ts";
import { RecordOpener } from "./record-protection.ts";
import { ContentType, HandshakeAssembler, HandshakeType, type RecordStream, type TlsRecord, checkChangeCipherSpec, isCloseNotify, isKeyUpdate } from "./records.ts";
import type { DataRecords, PartlyRevealed } from "./session-start.ts";
import type { CipherSuite } from "./suites.ts";
import { malformed } from "./wire.ts";

/**
 * The most epochs a connection's layout may name (a key update before and after each of 16 hidden parts): some
 * TLS stacks cap the key updates of one connection, and the client refuses a request that needs more.
 */
export const MAX_CLIENT_EPOCHS = 33;

/** A client epoch as the prover reveals it: how many records it holds, and its record keys when revealed. */
export interface ClientEpochKeys {
  records: number;
  keys: TrafficKeys | null;
}

/** A KeyUpdate record's content: 4-byte header and a 1-byte body, plus the inner type byte. */
const KEY_UPDATE_LENGTH = 5;
const UPDATE_NOT_REQUESTED = 0;

class Collected {
  readonly chunks: Uint8Array[] = [];
  readonly hidden: ByteRange[] = [];
  readonly records: DataRecords = { dataStart: null, closeNotifyAt: null };
  length = 0;
  data(bytes: Uint8Array, record: TlsRecord): void {
    this.records.dataStart ??= record.offset;
    this.chunks.push(bytes);
    this.length += bytes.length;
  }
  gap(length: number): void {
    this.hidden.push({ start: this.length, end: this.length + length });
    this.chunks.push(new Uint8Array(length));
    this.length += length;
  }
}

function take(stream: RecordStream, count: number, index: number): TlsRecord[] {
  const records: TlsRecord[] = [];
  for (let i = 0; i < count; i++) {
    const record = stream.take();
    if (!record) throw malformed(`the layout gives client epoch ${index} ${count} records, but the client's bytes end after ${i}: the epoch boundaries do not match the records`);
    if (record.type !== ContentType.applicationData) throw malformed(`the client sent a clear record of type ${record.type} in epoch ${index}`);
    records.push(record);
  }
  return records;
}

/** A hidden epoch: its application data's length from its records' sizes. */
function readHidden(records: TlsRecord[], index: number, into: Collected): void {
  if (records.length < 2) throw malformed(`hidden client epoch ${index} has ${records.length} records; it needs data and its KeyUpdate`);
  const length = records.reduce((n, record) => n + record.fragment.length - TAG_LENGTH - 1, 0) - KEY_UPDATE_LENGTH;
  if (records.some((record) => record.fragment.length <= TAG_LENGTH) || length <= 0) throw malformed(`hidden client epoch ${index} is too short to hold data and its KeyUpdate`);
  into.gap(length);
}

/** A revealed epoch: every record opened; a KeyUpdate ends it unless it is the last. */
function readRevealed(records: TlsRecord[], opener: RecordOpener, index: number, last: boolean, into: Collected): void {
  let closed = false;
  records.forEach((record, i) => {
    const opened = opener.tryOpen(record);
    if (!opened) {
      throw malformed(
        i === 0
          ? `client epoch ${index}'s revealed key does not authenticate the record the layout starts it at: the key is wrong or the epoch boundaries do not match the records`
          : `client epoch ${index}'s record ${i} does not authenticate under its revealed key: the key is wrong or the relayed bytes were changed`,
      );
    }
    if (closed) throw malformed("the client sent records after its close_notify alert");
    const endsEpoch = !last && i === records.length - 1;
    if (opened.type === ContentType.applicationData && !endsEpoch) into.data(opened.content, record);
    else if (opened.type === ContentType.handshake && endsEpoch) {
      const assembler = new HandshakeAssembler();
      assembler.push(opened.content);
      const message = assembler.next();
      if (!message || !isKeyUpdate(message) || message.body[0] !== UPDATE_NOT_REQUESTED || !assembler.empty) {
        throw malformed(`client epoch ${index} does not end with one KeyUpdate (update_not_requested) alone in its last record`);
      }
    } else if (opened.type === ContentType.alert && last && isCloseNotify(opened.content)) {
      closed = true;
      into.records.closeNotifyAt = record.offset;
    }
    else if (endsEpoch) {
      throw malformed(`client epoch ${index}'s last record holds content of type ${opened.type}, not its KeyUpdate: the epoch boundaries do not match the records`);
    } else if (opened.type === ContentType.handshake && opened.content[0] === HandshakeType.keyUpdate) {
      throw malformed(`client epoch ${index} holds a KeyUpdate where the layout does not end it: the epoch boundaries do not match the records`);
    } else {
      throw malformed(`client epoch ${index}'s record ${i} holds content of type ${opened.type} where application data was due`);
    }
  });
}

/** Reads `client` from after the hellos; throws unless the layout fits the records exactly. */
export function readClientEpochs(client: RecordStream, suite: CipherSuite, epochs: readonly ClientEpochKeys[]): { partly: PartlyRevealed; records: DataRecords | null } {
  if (epochs.length === 0 || epochs.length > MAX_CLIENT_EPOCHS) throw malformed(`the layout names ${epochs.length} client epochs; 1 to ${MAX_CLIENT_EPOCHS} are accepted`);
  if (!epochs.at(-1)!.keys) throw malformed("the last client epoch is hidden; a request written in epochs ends in a revealed one");
  if (client.peek()?.type === ContentType.changeCipherSpec) checkChangeCipherSpec(client.take()!, "client");
  const flight = client.take();
  if (flight?.type !== ContentType.applicationData) throw malformed("the client's bytes end before its handshake flight");
  const collected = new Collected();
  epochs.forEach((epoch, index) => {
    const last = index === epochs.length - 1;
    const records = take(client, last ? client.remaining : epoch.records, index);
    if (!epoch.keys) return readHidden(records, index, collected);
    readRevealed(records, new RecordOpener(suite, epoch.keys, `client epoch ${index}'s revealed key`, "client"), index, last, collected);
  });
  const bytes = new Uint8Array(collected.length);
  let offset = 0;
  for (const chunk of collected.chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  const hidden = mergeRanges(collected.hidden);
  return { partly: { bytes, hidden }, records: hidden.length === 0 ? collected.records : null };
}
