/**
 * TLS 1.3 (RFC 8446): after the clear hellos (and an optional ChangeCipherSpec for middlebox compatibility), the
 * server's flight EncryptedExtensions, [CertificateRequest], Certificate, CertificateVerify, Finished arrives under
 * the server handshake traffic secret. CertificateVerify signs 64 spaces + "TLS 1.3, server CertificateVerify" + 0 +
 * the transcript hash through Certificate; Finished is HMAC(finished_key, transcript hash through
 * CertificateVerify). Then the application traffic secret protects the answer, NewSessionTicket (inner type 22)
 * and alerts (21); KeyUpdate is refused. The client's side mirrors it with the client secrets when revealed.
 */
import type { KeyObject } from "node:crypto";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { sameBytes } from "../bytes.ts";
import { AppError } from "../errors.ts";
import { TAG_LENGTH } from "./aead.ts";
import { parseCertificateVerify, parseCertificates, parseEncryptedExtensions, selectedProtocol } from "./handshake.ts";
import { type TrafficKeys, digest, finishedVerifyData, trafficKeys } from "./key-schedule.ts";
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
} from "./records.ts";
import type { DataRecords, SessionData, SessionStart } from "./session-start.ts";
import { checkSignature } from "./signatures.ts";
import { malformed } from "./wire.ts";

export interface Tls13Secrets {
  serverHandshake: Uint8Array;
  serverApplication: Uint8Array;
  client: { handshake: Uint8Array; application: Uint8Array } | null;
}

const SERVER_CONTEXT = utf8ToBytes("TLS 1.3, server CertificateVerify");

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

/** Application data after the handshake: data (23) collected, NewSessionTicket accepted, close_notify last. */
function readApplicationRecords(stream: RecordStream, opener: RecordOpener, allowTickets: boolean): { data: Uint8Array; records: DataRecords } {
  const chunks: Uint8Array[] = [];
  const postHandshake = new HandshakeAssembler();
  const records: DataRecords = { dataStart: null, closeNotifyAt: null };
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
        if (message.type === HandshakeType.keyUpdate) throw new AppError("tls_unsupported", `the ${stream.sender} sent a KeyUpdate, which proxy mode does not accept`);
        if (message.type !== HandshakeType.newSessionTicket || !allowTickets) {
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
  const transcript: Uint8Array[] = [start.clientHelloRaw, start.serverHelloRaw];
  const hash = () => digest(suite.hash, ...transcript);
  const serverFlight = new HandshakeAssembler();
  const next = flightReader(
    server,
    new RecordOpener(suite, trafficKeys(suite, secrets.serverHandshake), "the revealed server handshake traffic secret", "server"),
    serverFlight,
  );
  const expect = (message: HandshakeMessage, type: number, name: string): HandshakeMessage => {
    if (message.type !== type) throw malformed(`the server sent handshake message type ${message.type} where its ${name} was due`);
    transcript.push(message.raw);
    return message;
  };
  const alpn = selectedProtocol(parseEncryptedExtensions(expect(next("EncryptedExtensions"), HandshakeType.encryptedExtensions, "EncryptedExtensions").body));
  let message = next("Certificate");
  if (message.type === HandshakeType.certificateRequest) {
    transcript.push(message.raw);
    message = next("Certificate");
  }
  if (message.type === HandshakeType.finished) throw new AppError("tls_unsupported", "the server sent no certificate; proxy mode needs one");
  const leafKey = checkChain(parseCertificates(expect(message, HandshakeType.certificate, "Certificate").body, "TLS1.3"));
  const certificateVerify = next("CertificateVerify");
  const signed = concatBytes(new Uint8Array(64).fill(0x20), SERVER_CONTEXT, Uint8Array.of(0), hash());
  const { scheme, signature } = parseCertificateVerify(expect(certificateVerify, HandshakeType.certificateVerify, "CertificateVerify").body);
  checkSignature(leafKey, scheme, signed, signature, "TLS1.3", "CertificateVerify");
  const finished = next("Finished");
  const expected = finishedVerifyData(suite.hash, secrets.serverHandshake, hash());
  if (!sameBytes(expect(finished, HandshakeType.finished, "Finished").body, expected)) {
    throw new AppError("tls_untrusted", "the server's Finished does not match the handshake transcript");
  }
  if (!serverFlight.empty) throw malformed("the server's Finished does not end its record");
  const { data: recv, records: serverRecords } = readApplicationRecords(
    server,
    new RecordOpener(suite, trafficKeys(suite, secrets.serverApplication), "the revealed server application traffic secret", "server"),
    true,
  );
  if (!secrets.client) return { recv, serverRecords, clientRecords: null, alpn, sent: null, sentLength: estimatedSentLength(start.client) };
  const { data: sent, records: clientRecords } = readClientSide(start, transcript, secrets.client);
  return { recv, serverRecords, clientRecords, alpn, sent, sentLength: sent.length };
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
  return readApplicationRecords(
    start.client,
    new RecordOpener(suite, trafficKeys(suite, client.application), "the revealed client application traffic secret", "client"),
    false,
  );
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
