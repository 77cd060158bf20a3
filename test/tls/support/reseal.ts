import { concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import { sealAead } from "../../../src/tls/aead.ts";
import { type TrafficKeys, keyBlock12, nextTrafficSecret, trafficKeys } from "../../../src/tls/key-schedule.ts";
import { RecordOpener, RecordSealer } from "../../../src/tls/record-protection.ts";
import { ContentType, HandshakeType, handshakeMessage, splitRecords } from "../../../src/tls/records.ts";
import { readHellos, type RelayedBytes } from "../../../src/tls/session-start.ts";
import type { CipherSuite } from "../../../src/tls/suites.ts";
import type { RevealedKeys } from "../../../src/tls/verify-session.ts";
import { uint16Bytes } from "../../../src/tls/wire.ts";

/**
 * A relayed session's protected records opened with the keys its prover holds, to be changed and sealed again: what
 * a prover who knows every key could forge. Each record keeps its key (an index into the direction's keys) and is
 * sealed again under it with the sequence numbers of its new place, so every forged record authenticates and only
 * the check under test can refuse it.
 */

/** One protected record as opened: its real content type (TLS 1.3: the inner type) and content. */
export interface OpenRecord {
  type: number;
  content: Uint8Array;
  /** Which of the direction's keys protects it. */
  key: number;
  /** Where it started in the relayed bytes it was opened from (none for a forged record). */
  offset?: number;
}

/** One direction: its clear records as relayed, then its protected records opened. */
export interface OpenDirection {
  clear: Uint8Array;
  records: OpenRecord[];
}

/** Both directions of a session and the keys that open them. */
export interface OpenSession {
  suite: CipherSuite;
  server: OpenDirection;
  client: OpenDirection;
  serverKeys: TrafficKeys[];
  clientKeys: TrafficKeys[];
}

const sequenceBytes = (seq: number): Uint8Array => {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(seq));
  return out;
};

/** Opens `bytes` from the first record `keys[0]` opens; each later record under the key it opens under. */
export function openDirection(bytes: Uint8Array, suite: CipherSuite, keys: TrafficKeys[], sender: string): OpenDirection {
  const { records } = splitRecords(bytes, sender);
  const start = records.findIndex((record) => new RecordOpener(suite, keys[0]!, "key 0", sender).tryOpen(record) !== null);
  if (start < 0) throw new Error(`no ${sender} record opens under its first key`);
  let key = 0;
  let opener = new RecordOpener(suite, keys[0]!, "key 0", sender);
  const opened = records.slice(start).map((record) => {
    for (let found = opener.tryOpen(record); ; found = opener.tryOpen(record)) {
      if (found) return { type: found.type, content: found.content.slice(), key, offset: record.offset };
      if (++key >= keys.length) throw new Error(`a ${sender} record opens under none of its keys`);
      opener = new RecordOpener(suite, keys[key]!, `key ${key}`, sender);
    }
  });
  return { clear: bytes.subarray(0, records[start]!.offset), records: opened };
}

/** A TLS 1.2 record sealed as RFC 5288/7905 write it (GCM: the sequence number as explicit nonce). */
function seal12(suite: CipherSuite, keys: TrafficKeys, seq: number, type: number, content: Uint8Array): Uint8Array {
  const gcm = suite.aead !== "chacha20-poly1305";
  const nonce = gcm ? concatBytes(keys.iv, sequenceBytes(seq)) : keys.iv.map((byte, i) => byte ^ (i < 4 ? 0 : (sequenceBytes(seq)[i - 4] ?? 0)));
  const aad = concatBytes(sequenceBytes(seq), Uint8Array.of(type, 3, 3), uint16Bytes(content.length));
  const fragment = concatBytes(gcm ? sequenceBytes(seq) : new Uint8Array(0), sealAead(suite.aead, keys.key, nonce, aad, content));
  return concatBytes(Uint8Array.of(type, 3, 3), uint16Bytes(fragment.length), fragment);
}

/** The direction's bytes again: its clear records, then each record sealed under its key in its new place. */
export function sealDirection(direction: OpenDirection, suite: CipherSuite, keys: TrafficKeys[]): Uint8Array {
  const sealers = new Map<number, RecordSealer>();
  const sequences = new Map<number, number>();
  const sealed = direction.records.map(({ type, content, key }) => {
    if (suite.version === "TLS1.2") {
      const seq = sequences.get(key) ?? 0;
      sequences.set(key, seq + 1);
      return seal12(suite, keys[key]!, seq, type, content);
    }
    if (!sealers.has(key)) sealers.set(key, new RecordSealer(suite, keys[key]!));
    return sealers.get(key)!.seal(type, content);
  });
  return concatBytes(direction.clear, ...sealed);
}

/** A TLS 1.3 direction's keys: handshake, application, then `updates` key updates of it. */
function keys13(suite: CipherSuite, handshake: string, application: string, updates: number): TrafficKeys[] {
  const secrets: Uint8Array[] = [hexToBytes(handshake), hexToBytes(application)];
  for (let i = 0; i < updates; i++) secrets.push(nextTrafficSecret(suite.hash, secrets.at(-1)!));
  return secrets.map((secret) => trafficKeys(suite, secret));
}

/**
 * Opens both directions of a session with the keys revealed with its request (TLS 1.3 traffic secrets, TLS 1.2
 * master secret). `updates`: key updates to allow for after each side's first application secret.
 */
export function openSession(relayed: RelayedBytes, keys: RevealedKeys, updates = 2): OpenSession {
  const { suite, clientHello, serverHello } = readHellos(relayed);
  let serverKeys: TrafficKeys[];
  let clientKeys: TrafficKeys[];
  if (keys.version === "TLS1.3") {
    if (!keys.clientHandshakeTrafficSecret || !keys.clientApplicationTrafficSecret) throw new Error("the client's traffic secrets are needed");
    serverKeys = keys13(suite, keys.serverHandshakeTrafficSecret, keys.serverApplicationTrafficSecret, updates);
    clientKeys = keys13(suite, keys.clientHandshakeTrafficSecret, keys.clientApplicationTrafficSecret, updates);
  } else {
    if (!keys.masterSecret) throw new Error("the master secret is needed");
    const block = keyBlock12(suite, hexToBytes(keys.masterSecret), clientHello.random, serverHello.random);
    serverKeys = [block.server];
    clientKeys = [block.client];
  }
  return {
    suite,
    serverKeys,
    clientKeys,
    server: openDirection(relayed.serverToClient, suite, serverKeys, "server"),
    client: openDirection(relayed.clientToServer, suite, clientKeys, "client"),
  };
}

/** The session's bytes with `change` applied to its opened records, each sealed again under its key. */
export function resealed(session: OpenSession, change: (server: OpenRecord[], client: OpenRecord[]) => void): RelayedBytes {
  const server = { ...session.server, records: session.server.records.map((record) => ({ ...record, content: record.content.slice() })) };
  const client = { ...session.client, records: session.client.records.map((record) => ({ ...record, content: record.content.slice() })) };
  change(server.records, client.records);
  return { serverToClient: sealDirection(server, session.suite, session.serverKeys), clientToServer: sealDirection(client, session.suite, session.clientKeys) };
}

/** The index of the first record of `type` whose content starts with `first` (any when undefined). */
export function findRecord(records: OpenRecord[], type: number, first?: number): number {
  const at = records.findIndex((record) => record.type === type && (first === undefined || record.content[0] === first));
  if (at < 0) throw new Error(`no record of type ${type}${first === undefined ? "" : ` starting with ${first}`}`);
  return at;
}

/** A record holding one KeyUpdate with this body byte (0: update_not_requested, 1: update_requested). */
export const keyUpdateRecord = (key: number, body: number): OpenRecord => ({ type: ContentType.handshake, content: handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(body)), key });

/** An alert record's content: level, description. */
export const alertRecord = (key: number, level: number, description: number): OpenRecord => ({ type: ContentType.alert, content: Uint8Array.of(level, description), key });
