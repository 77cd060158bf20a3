/**
 * The client's full TLS 1.3 handshake (RFC 8446 §2): ClientHello; ServerHello, or a HelloRetryRequest then a
 * second ClientHello and the ServerHello; the server's encrypted flight checked whole (server-flight.ts:
 * chain, CertificateVerify, Finished) and its EncryptedExtensions (ALPN http/1.1 or none; nothing unasked);
 * then the client's ChangeCipherSpec and its flight (an empty Certificate when one was requested, Finished).
 * The application traffic secrets come out; the handshake's own secrets stay here but the server's.
 */
import { randomBytes } from "node:crypto";
import type { X509Certificate } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "../../core/errors.ts";
import { checkCertificateChain } from "../certificates.ts";
import { Extension, parseServerHello } from "../handshake.ts";
import { applicationSecrets, digest, finishedVerifyData, handshakeSecrets, trafficKeys } from "../key-schedule.ts";
import { RecordOpener, RecordSealer } from "../record-protection.ts";
import {
  ContentType,
  HandshakeAssembler,
  type HandshakeMessage,
  HandshakeType,
  type TlsRecord,
  alertName,
  checkChangeCipherSpec,
  handshakeMessage,
} from "../records.ts";
import { checkServerFlight } from "../server-flight.ts";
import { messageHash } from "../session-start.ts";
import type { CipherSuite } from "../suites.ts";
import { WireReader, malformed, vectorBytes } from "../wire.ts";
import {
  type HelloOffer,
  type RetryRequest,
  checkHelloRetry,
  checkServerHello,
  clientHelloMessage,
  onlyExtensions,
  retriedOffer,
  tls12Target,
} from "./hello.ts";
import type { IncomingRecords } from "./incoming.ts";
import { type KeyShareGroup, newKeyShare } from "./key-shares.ts";
import { CHANGE_CIPHER_SPEC, type RecordWriter, plainRecord } from "./record-writer.ts";

export interface HandshakeOptions {
  serverName: string;
  anchors: readonly X509Certificate[];
  now: Date;
  suites: readonly CipherSuite[];
  keyShares: readonly KeyShareGroup[];
}

export interface Established {
  suite: CipherSuite;
  serverHandshakeSecret: Uint8Array;
  serverApplicationSecret: Uint8Array;
  clientApplicationSecret: Uint8Array;
}

/** The most the server's encrypted flight may hold: a long certificate chain fits many times over. */
const MAX_FLIGHT_BYTES = 256 * 1024;
const HTTP11 = "http/1.1";

const PROTOCOL_VERSION = 70;

/** The target's alert during the handshake; protocol_version says it does not speak TLS 1.3. */
function handshakeRefused(record: { fragment: Uint8Array }): AppError {
  const message = `the target refused the TLS 1.3 handshake with ${alertName(record.fragment)}`;
  return record.fragment[1] === PROTOCOL_VERSION ? tls12Target(message) : new AppError("tls_unsupported", message);
}

async function nextRecord(incoming: IncomingRecords, expecting: string): Promise<TlsRecord> {
  const record = await incoming.next();
  if (!record) throw new AppError("tls_unsupported", `the target closed the connection during the TLS handshake (before its ${expecting})`);
  if (record.type === ContentType.alert) throw handshakeRefused(record);
  return record;
}

/** The next clear handshake message; one ChangeCipherSpec may come first when `allowChangeCipherSpec`. */
async function nextPlainMessage(incoming: IncomingRecords, assembler: HandshakeAssembler, expecting: string, allowChangeCipherSpec: boolean): Promise<HandshakeMessage> {
  let changeCipherSpecSeen = !allowChangeCipherSpec;
  for (;;) {
    const message = assembler.next();
    if (message) return message;
    const record = await nextRecord(incoming, expecting);
    if (record.type === ContentType.changeCipherSpec && !changeCipherSpecSeen && assembler.empty) {
      checkChangeCipherSpec(record, "server");
      changeCipherSpecSeen = true;
    } else if (record.type === ContentType.handshake) assembler.push(record.fragment);
    else throw malformed(`the server sent a record of type ${record.type} where its ${expecting} was due`);
  }
}

/** The server's encrypted flight, message by message through its Finished, which must end its record. */
async function readServerFlight(incoming: IncomingRecords, opener: RecordOpener): Promise<HandshakeMessage[]> {
  const assembler = new HandshakeAssembler();
  const messages: HandshakeMessage[] = [];
  let protectedSeen = false;
  let bytes = 0;
  for (;;) {
    const record = await nextRecord(incoming, "Finished");
    if (record.type === ContentType.changeCipherSpec && !protectedSeen) {
      checkChangeCipherSpec(record, "server");
      continue;
    }
    if (record.type !== ContentType.applicationData) throw malformed(`the server sent a clear record of type ${record.type} after its ServerHello`);
    protectedSeen = true;
    bytes += record.fragment.length;
    if (bytes > MAX_FLIGHT_BYTES) throw malformed(`the server's handshake flight exceeds ${MAX_FLIGHT_BYTES} bytes`);
    const opened = opener.open(record);
    if (opened.type === ContentType.alert) throw handshakeRefused({ fragment: opened.content });
    if (opened.type !== ContentType.handshake) throw malformed(`the server sent data of type ${opened.type} before its Finished`);
    assembler.push(opened.content);
    for (let message = assembler.next(); message; message = assembler.next()) {
      messages.push(message);
      if (message.type !== HandshakeType.finished) continue;
      if (!assembler.empty) throw malformed("the server's Finished does not end its record");
      return messages;
    }
  }
}

/** EncryptedExtensions may acknowledge SNI, list the server's groups and choose http/1.1; nothing else was asked. */
function checkEncryptedExtensions(message: HandshakeMessage): void {
  const r = new WireReader(message.body, "EncryptedExtensions");
  const list = new WireReader(r.vector(2), "EncryptedExtensions extensions");
  r.end();
  const extensions = new Map<number, Uint8Array>();
  while (list.remaining > 0) {
    const type = list.uint(2);
    if (extensions.has(type)) throw malformed(`the server's EncryptedExtensions repeats extension ${type}`);
    extensions.set(type, list.vector(2));
  }
  onlyExtensions(extensions, [Extension.serverName, Extension.supportedGroups, Extension.alpn], "EncryptedExtensions");
  const alpn = extensions.get(Extension.alpn);
  if (!alpn) return;
  const names = new WireReader(new WireReader(alpn, "ALPN").vector(2), "ALPN list");
  const chosen = new TextDecoder().decode(names.vector(1));
  names.end();
  if (chosen !== HTTP11) throw new AppError("tls_unsupported", `the target chose application protocol ${JSON.stringify(chosen)}; the client offered http/1.1 only`);
}

/** The client's flight: an empty Certificate when the server asked for one (same context), then Finished. */
function clientFlight(suite: CipherSuite, clientHandshakeSecret: Uint8Array, transcript: Uint8Array[], certificateRequest: HandshakeMessage | null): Uint8Array {
  const messages: Uint8Array[] = [];
  if (certificateRequest) {
    const context = new WireReader(certificateRequest.body, "CertificateRequest").vector(1);
    const certificate = handshakeMessage(HandshakeType.certificate, concatBytes(vectorBytes(1, context), vectorBytes(3)));
    transcript.push(certificate);
    messages.push(certificate);
  }
  messages.push(handshakeMessage(HandshakeType.finished, finishedVerifyData(suite.hash, clientHandshakeSecret, digest(suite.hash, ...transcript))));
  return new RecordSealer(suite, trafficKeys(suite, clientHandshakeSecret)).seal(ContentType.handshake, concatBytes(...messages));
}

/** Hellos up to the ServerHello, a HelloRetryRequest followed: the suite, the ECDHE secret, the transcript so far. */
async function exchangeHellos(incoming: IncomingRecords, writer: RecordWriter, options: HandshakeOptions) {
  let offer: HelloOffer = {
    random: new Uint8Array(randomBytes(32)),
    sessionId: new Uint8Array(randomBytes(32)),
    serverName: options.serverName,
    suites: options.suites,
    shares: options.keyShares.map(newKeyShare),
  };
  const firstHello = clientHelloMessage(offer, null);
  writer.queue(plainRecord(ContentType.handshake, firstHello));
  writer.flush();
  const plain = new HandshakeAssembler();
  let serverHello = await nextPlainMessage(incoming, plain, "ServerHello", false);
  if (serverHello.type !== HandshakeType.serverHello) throw malformed(`the server sent handshake message type ${serverHello.type} where its ServerHello was due`);
  let transcript = [firstHello];
  let retry: RetryRequest | null = null;
  const parsed = parseServerHello(serverHello.body);
  if (parsed.helloRetry) {
    retry = checkHelloRetry(parsed, offer);
    if (!plain.empty) throw malformed("the server's HelloRetryRequest does not end its record");
    offer = retriedOffer(offer, retry);
    const secondHello = clientHelloMessage(offer, retry.cookie);
    writer.queue(plainRecord(ContentType.handshake, secondHello));
    writer.flush();
    transcript = [messageHash(retry.suite.hash, firstHello), serverHello.raw, secondHello];
    serverHello = await nextPlainMessage(incoming, plain, "ServerHello", true);
    if (serverHello.type !== HandshakeType.serverHello) throw malformed(`the server sent handshake message type ${serverHello.type} where its ServerHello was due`);
  }
  const agreed = checkServerHello(retry ? parseServerHello(serverHello.body) : parsed, offer, retry);
  if (!plain.empty) throw malformed("the server's ServerHello does not end its record");
  transcript.push(serverHello.raw);
  return { ...agreed, transcript };
}

export async function handshake(incoming: IncomingRecords, writer: RecordWriter, options: HandshakeOptions): Promise<Established> {
  const { suite, sharedSecret, transcript } = await exchangeHellos(incoming, writer, options);
  const secrets = handshakeSecrets(suite.hash, sharedSecret, digest(suite.hash, ...transcript));
  const flight = await readServerFlight(incoming, new RecordOpener(suite, trafficKeys(suite, secrets.server), "the server handshake traffic key", "server"));
  let position = 0;
  const next = (expecting: string): HandshakeMessage => {
    const message = flight[position++];
    if (!message) throw malformed(`the server's flight ends before its ${expecting}`);
    return message;
  };
  const checkChain = (chainDer: Uint8Array[]) => checkCertificateChain(chainDer, options.serverName, options.anchors, options.now);
  const { encryptedExtensions, certificateRequest } = checkServerFlight(next, transcript, suite, secrets.server, checkChain);
  checkEncryptedExtensions(encryptedExtensions);
  const application = applicationSecrets(suite.hash, secrets.handshake, digest(suite.hash, ...transcript));
  writer.queue(CHANGE_CIPHER_SPEC);
  writer.queue(clientFlight(suite, secrets.client, transcript, certificateRequest));
  writer.flush();
  return { suite, serverHandshakeSecret: secrets.server, serverApplicationSecret: application.server, clientApplicationSecret: application.client };
}
