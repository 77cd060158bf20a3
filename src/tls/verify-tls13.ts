/**
 * TLS 1.3 (RFC 8446): after the clear hellos (and an optional ChangeCipherSpec for middlebox compatibility), the
 * server's flight EncryptedExtensions, [CertificateRequest], Certificate, CertificateVerify, Finished arrives under
 * the server handshake traffic secret. CertificateVerify signs 64 spaces + "TLS 1.3, server CertificateVerify" + 0 +
 * the transcript hash through Certificate; Finished is HMAC(finished_key, transcript hash through
 * CertificateVerify). Then the application traffic secret protects the answer, NewSessionTicket (inner type 22)
 * and alerts (21); a KeyUpdate moves to the next secret, which the revealed one derives. The client's side mirrors
 * it with the client secrets when revealed.
 */
import type { KeyObject } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { sameBytes } from "../base/bytes.ts";
import { AppError } from "../core/errors.ts";
import { TAG_LENGTH } from "./aead.ts";
import { parseEncryptedExtensions, selectedProtocol } from "./handshake.ts";
import { type TrafficKeys, digest, finishedVerifyData, nextTrafficSecret, trafficKeys } from "./key-schedule.ts";
import { RecordOpener } from "./record-protection.ts";
import {
  ContentType,
  HandshakeAssembler,
  type HandshakeMessage,
  HandshakeType,
  type RecordStream,
  alertError,
  checkChangeCipherSpec,
  isCloseNotify,
  isKeyUpdate,
} from "./records.ts";
import type { DataRecords, SessionData, SessionStart } from "./session-start.ts";
import type { CipherSuite } from "./suites.ts";
import { type ClientEpochKeys, readClientEpochs } from "./verify-client-epochs.ts";
import { checkServerFlight } from "./server-flight.ts";
import { malformed } from "./wire.ts";

export interface Tls13Secrets {
  serverHandshake: Uint8Array;
  serverApplication: Uint8Array;
  /** The client's traffic secrets (the request revealed whole), its epochs (verify-client-epochs.ts), or nothing. */
  client: { handshake: Uint8Array; application: Uint8Array } | { epochs: readonly ClientEpochKeys[] } | null;
}

/** Reads a protected handshake flight message by message; ChangeCipherSpec records before it (middlebox compatibility) are skipped. */
function flightReader(stream: RecordStream, opener: RecordOpener, assembler: HandshakeAssembler) {
  let protectedSeen = false;
  return (expecting: string): HandshakeMessage => {
    for (;;) {
      const message = assembler.next();
      if (message) return message;
      const record = stream.take();
      if (!record) throw malformed(`the ${stream.sender}'s bytes end before its ${expecting}`);
      if (record.type === ContentType.changeCipherSpec && !protectedSeen) {
        checkChangeCipherSpec(record, stream.sender);
        continue;
      }
      if (record.type === ContentType.alert) throw alertError(stream.sender, record.fragment);
      if (record.type !== ContentType.applicationData) throw malformed(`the ${stream.sender} sent a clear record of type ${record.type} after its hello`);
      protectedSeen = true;
      const opened = opener.open(record);
      if (opened.type === ContentType.alert) throw alertError(stream.sender, opened.content);
      if (opened.type !== ContentType.handshake) throw malformed(`the ${stream.sender} sent data of type ${opened.type} before its Finished`);
      assembler.push(opened.content);
    }
  };
}

/**
 * Application data after the handshake, under a first traffic secret: data (23) collected, NewSessionTicket
 * accepted when `allowTickets`, a KeyUpdate moves to the next secret (derived from the current one, RFC 8446
 * §4.6.3; it must end its record), close_notify last; where the data and the close_notify lay.
 */
function readApplicationRecords(
  stream: RecordStream,
  suite: CipherSuite,
  firstSecret: Uint8Array,
  keyName: string,
  allowTickets: boolean,
): { data: Uint8Array; records: DataRecords } {
  const chunks: Uint8Array[] = [];
  const postHandshake = new HandshakeAssembler();
  const records: DataRecords = { dataStart: null, closeNotifyAt: null };
  let secret = firstSecret;
  let updates = 0;
  const openerOf = () => new RecordOpener(suite, trafficKeys(suite, secret), updates === 0 ? keyName : `${keyName} after ${updates} key updates`, stream.sender);
  let opener = openerOf();
  let closed = false;
  for (let record = stream.take(); record; record = stream.take()) {
    if (closed) throw malformed(`the ${stream.sender} sent records after its close_notify alert`);
    if (record.type !== ContentType.applicationData) throw malformed(`the ${stream.sender} sent a clear record of type ${record.type} after the handshake`);
    const { type, content } = opener.open(record);
    if (type === ContentType.applicationData) {
      records.dataStart ??= record.offset;
      chunks.push(content);
    } else if (type === ContentType.alert) {
      if (!isCloseNotify(content)) throw alertError(stream.sender, content);
      closed = true;
      records.closeNotifyAt = record.offset;
    } else if (type === ContentType.handshake) {
      postHandshake.push(content);
      for (let message = postHandshake.next(); message; message = postHandshake.next()) {
        if (message.type === HandshakeType.keyUpdate) {
          if (!isKeyUpdate(message) || !postHandshake.empty) throw malformed(`the ${stream.sender}'s KeyUpdate is malformed or does not end its record`);
          secret = nextTrafficSecret(suite.hash, secret);
          updates++;
          opener = openerOf();
        } else if (message.type !== HandshakeType.newSessionTicket || !allowTickets) {
          throw new AppError("tls_unsupported", `the ${stream.sender} sent post-handshake message type ${message.type}, which proxy mode does not accept`);
        }
      }
    } else throw malformed(`the ${stream.sender} sent protected content of type ${type}`);
  }
  return { data: concatBytes(...chunks), records };
}

export function verifyTls13(start: SessionStart, secrets: Tls13Secrets, checkChain: (chainDer: Uint8Array[]) => KeyObject): SessionData {
  const { suite, server } = start;
  if (!start.serverAssembler.empty) throw malformed("the server's ServerHello does not end its record");
  const transcript: Uint8Array[] = [...start.transcript];
  const serverFlight = new HandshakeAssembler();
  const next = flightReader(
    server,
    new RecordOpener(suite, trafficKeys(suite, secrets.serverHandshake), "the revealed server handshake traffic secret", "server"),
    serverFlight,
  );
  const flight = checkServerFlight(next, transcript, suite, secrets.serverHandshake, checkChain);
  const alpn = selectedProtocol(parseEncryptedExtensions(flight.encryptedExtensions.body));
  if (!serverFlight.empty) throw malformed("the server's Finished does not end its record");
  const { data: recv, records: serverRecords } = readApplicationRecords(server, suite, secrets.serverApplication, "the revealed server application traffic secret", true);
  const serverSide = { recv, serverRecords, alpn };
  if (!secrets.client) return { ...serverSide, clientRecords: null, sent: null, sentLength: estimatedSentLength(start.client), sentPartly: null };
  if ("epochs" in secrets.client) {
    // With a hidden epoch, where the client closed is not known (clientRecords null): a close-framed answer is refused.
    const { partly, records } = readClientEpochs(start.client, suite, secrets.client.epochs);
    return { ...serverSide, clientRecords: records, sent: null, sentLength: partly.bytes.length, sentPartly: partly };
  }
  const { data: sent, records: clientRecords } = readClientSide(start, transcript, secrets.client);
  return { ...serverSide, clientRecords, sent, sentLength: sent.length, sentPartly: null };
}

/** The client's flight (optional Certificate/CertificateVerify, then Finished, checked) and its application data. */
function readClientSide(
  start: SessionStart,
  transcript: Uint8Array[],
  client: { handshake: Uint8Array; application: Uint8Array },
): { data: Uint8Array; records: DataRecords } {
  const { suite } = start;
  const keys: TrafficKeys = trafficKeys(suite, client.handshake);
  const flight = new HandshakeAssembler();
  const next = flightReader(start.client, new RecordOpener(suite, keys, "the revealed client handshake traffic secret", "client"), flight);
  const clientTranscript = [...transcript];
  for (;;) {
    const message = next("Finished");
    if (message.type === HandshakeType.finished) {
      const expected = finishedVerifyData(suite.hash, client.handshake, digest(suite.hash, ...clientTranscript));
      if (!sameBytes(message.body, expected)) throw new AppError("transcript_invalid", "the client's Finished does not match the revealed client handshake traffic secret");
      break;
    }
    if (message.type !== HandshakeType.certificate && message.type !== HandshakeType.certificateVerify) {
      throw malformed(`the client sent handshake message type ${message.type} before its Finished`);
    }
    clientTranscript.push(message.raw);
  }
  if (!flight.empty) throw malformed("the client's Finished does not end its record");
  return readApplicationRecords(start.client, suite, client.application, "the revealed client application traffic secret", false);
}

/**
 * Without the client's keys: every protected client record after its first (its handshake flight, Finished) is
 * counted as application data less the tag and the inner type byte. An upper bound: a closing alert or padding
 * counts too.
 */
function estimatedSentLength(client: RecordStream): number {
  let length = 0;
  let flightSeen = false;
  for (let record = client.take(); record; record = client.take()) {
    if (record.type === ContentType.changeCipherSpec && !flightSeen) continue;
    if (record.type !== ContentType.applicationData) throw malformed(`the client sent a clear record of type ${record.type} after its hello`);
    if (flightSeen) length += Math.max(0, record.fragment.length - TAG_LENGTH - 1);
    flightSeen = true;
  }
  return length;
}
