/**
 * TLS 1.2 with ECDHE and AEAD (RFC 5246, 8422, 5288, 7905): the server's Certificate, ServerKeyExchange,
 * [CertificateRequest] and ServerHelloDone travel in clear after its ServerHello; the ServerKeyExchange signs
 * client_random + server_random + the ECDH parameters. A server that goes from ServerHello to ChangeCipherSpec
 * or NewSessionTicket, or echoes the client's session id, resumed a session: refused. After ChangeCipherSpec the
 * first protected record is Finished (its verify_data needs the master secret, which stays with the prover: it is
 * checked for shape and authenticity only), then application data (23) and alerts (21); a protected handshake
 * record then is renegotiation: refused. Record types are visible, so the client's data length is exact.
 */
import type { KeyObject } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { sameBytes } from "../base/bytes.ts";
import { AppError } from "../core/errors.ts";
import { parseCertificates, parseServerKeyExchange, selectedProtocol } from "./handshake.ts";
import type { TrafficKeys } from "./key-schedule.ts";
import { RecordOpener, plaintextLength12 } from "./record-protection.ts";
import {
  ContentType,
  type HandshakeAssembler,
  type HandshakeMessage,
  HandshakeType,
  type RecordStream,
  type TlsRecord,
  alertError,
  checkChangeCipherSpec,
  isCloseNotify,
  nextPlainMessage,
  takePlainHandshakeRecord,
} from "./records.ts";
import type { DataRecords, SessionData, SessionStart } from "./session-start.ts";
import { checkSignature } from "./signatures.ts";
import { malformed } from "./wire.ts";

export interface Tls12Keys {
  server: TrafficKeys;
  client: TrafficKeys | null;
}

/**
 * The handshake messages the Finished messages cover (RFC 5246 §7.4.9), as read: after the hellos, the server's
 * flight through ServerHelloDone, the client's flight before its ChangeCipherSpec, the server's NewSessionTicket,
 * and each side's opened Finished (null without that side's key).
 */
export interface Tls12Handshake {
  serverFlight: Uint8Array[];
  clientFlight: Uint8Array[];
  tickets: Uint8Array[];
  clientFinished: Uint8Array | null;
  serverFinished: Uint8Array | null;
}

/** What a client may send in clear after its ClientHello. */
const CLIENT_FLIGHT: ReadonlySet<number> = new Set([HandshakeType.certificate, HandshakeType.clientKeyExchange, HandshakeType.certificateVerify]);

const resumed = (): AppError =>
  new AppError("tls_unsupported", "the server resumed a TLS 1.2 session; proxy mode needs a full handshake with the server's certificate");

/** Clear handshake messages up to ChangeCipherSpec (NewSessionTicket, or the client's key exchange), checked by `accept`. */
function readUntilChangeCipherSpec(stream: RecordStream, assembler: HandshakeAssembler, accept: (message: HandshakeMessage) => void): Uint8Array[] {
  const read: Uint8Array[] = [];
  for (;;) {
    for (let message = assembler.next(); message; message = assembler.next()) {
      accept(message);
      read.push(message.raw);
    }
    const record = stream.peek();
    if (record?.type === ContentType.changeCipherSpec) {
      if (!assembler.empty) throw malformed(`the ${stream.sender}'s ChangeCipherSpec cuts a handshake message`);
      stream.take();
      checkChangeCipherSpec(record, stream.sender);
      return read;
    }
    takePlainHandshakeRecord(stream, assembler, "ChangeCipherSpec");
  }
}

/**
 * The protected records after ChangeCipherSpec: Finished (opened when there is a key, and returned), then
 * application data, each record given to `onData`, and at most a final alert (checked to be close_notify when
 * there is a key); where the data and the alert lay.
 */
function readProtected(
  stream: RecordStream,
  opener: RecordOpener | null,
  onData: (record: TlsRecord) => void,
): { finished: Uint8Array | null; records: DataRecords } {
  const finishedRecord = stream.take();
  if (!finishedRecord) throw malformed(`the ${stream.sender}'s bytes end before its Finished`);
  if (finishedRecord.type !== ContentType.handshake) throw malformed(`the ${stream.sender}'s first protected record is not its Finished`);
  const finished = opener?.open(finishedRecord).content;
  if (finished && (finished.length !== 16 || finished[0] !== HandshakeType.finished)) throw malformed(`the ${stream.sender}'s Finished is malformed`);
  const records: DataRecords = { dataStart: null, closeNotifyAt: null };
  let closed = false;
  for (let record = stream.take(); record; record = stream.take()) {
    if (closed) throw malformed(`the ${stream.sender} sent records after its close_notify alert`);
    if (record.type === ContentType.applicationData) {
      records.dataStart ??= record.offset;
      onData(record);
    } else if (record.type === ContentType.alert) {
      const alert = opener?.open(record).content;
      if (alert && !isCloseNotify(alert)) throw alertError(stream.sender, alert);
      closed = true;
      records.closeNotifyAt = record.offset;
    } else if (record.type === ContentType.handshake) {
      throw new AppError("tls_unsupported", `the ${stream.sender} started a renegotiation, which proxy mode does not accept`);
    } else throw malformed(`the ${stream.sender} sent a record of type ${record.type} after its Finished`);
  }
  return { finished: finished ?? null, records };
}

/** All application data of one side, opened with its key, its Finished, and where its records lay. */
function openedData(stream: RecordStream, opener: RecordOpener): { data: Uint8Array; finished: Uint8Array | null; records: DataRecords } {
  const chunks: Uint8Array[] = [];
  const { finished, records } = readProtected(stream, opener, (record) => chunks.push(opener.open(record).content));
  return { data: concatBytes(...chunks), finished, records };
}

export function verifyTls12(start: SessionStart, keys: Tls12Keys, checkChain: (chainDer: Uint8Array[]) => KeyObject): SessionData & { handshake: Tls12Handshake } {
  const { suite, server, serverAssembler, clientHello, serverHello } = start;
  if (clientHello.sessionId.length > 0 && sameBytes(clientHello.sessionId, serverHello.sessionId)) throw resumed();
  if (serverAssembler.empty && server.peek()?.type === ContentType.changeCipherSpec) throw resumed();
  const first = nextPlainMessage(server, serverAssembler, "Certificate");
  if (first.type === HandshakeType.newSessionTicket || first.type === HandshakeType.finished) throw resumed();
  if (first.type !== HandshakeType.certificate) throw malformed(`the server sent handshake message type ${first.type} where its Certificate was due`);
  const leafKey = checkChain(parseCertificates(first.body, "TLS1.2"));
  const keyExchange = nextPlainMessage(server, serverAssembler, "ServerKeyExchange");
  if (keyExchange.type !== HandshakeType.serverKeyExchange) throw new AppError("tls_unsupported", "the server sent no ServerKeyExchange; proxy mode needs ECDHE");
  const { params, scheme, signature } = parseServerKeyExchange(keyExchange.body);
  checkSignature(leafKey, scheme, concatBytes(clientHello.random, serverHello.random, params), signature, "TLS1.2", "ServerKeyExchange");
  const serverFlight = [first.raw, keyExchange.raw];
  let done = nextPlainMessage(server, serverAssembler, "ServerHelloDone");
  if (done.type === HandshakeType.certificateRequest) {
    serverFlight.push(done.raw);
    done = nextPlainMessage(server, serverAssembler, "ServerHelloDone");
  }
  if (done.type !== HandshakeType.serverHelloDone) throw malformed(`the server sent handshake message type ${done.type} where its ServerHelloDone was due`);
  serverFlight.push(done.raw);
  const tickets = readUntilChangeCipherSpec(server, serverAssembler, (message) => {
    if (message.type !== HandshakeType.newSessionTicket) throw malformed(`the server sent handshake message type ${message.type} before its ChangeCipherSpec`);
  });
  const recv = openedData(server, new RecordOpener(suite, keys.server, "the revealed server write key", "server"));
  const alpn = selectedProtocol(serverHello.extensions);
  const clientFlight = readUntilChangeCipherSpec(start.client, start.clientAssembler, (message) => {
    if (!CLIENT_FLIGHT.has(message.type)) {
      throw malformed(`the client sent handshake message type ${message.type} before its ChangeCipherSpec`);
    }
  });
  const handshake = { serverFlight, clientFlight, tickets, serverFinished: recv.finished };
  if (keys.client) {
    const sent = openedData(start.client, new RecordOpener(suite, keys.client, "the revealed client write key", "client"));
    return {
      recv: recv.data,
      serverRecords: recv.records,
      clientRecords: sent.records,
      alpn,
      sent: sent.data,
      sentLength: sent.data.length,
      sentPartly: null,
      handshake: { ...handshake, clientFinished: sent.finished },
    };
  }
  let sentLength = 0;
  // Record types travel in clear: where the client's alert lay is known without its key.
  const { records: clientRecords } = readProtected(start.client, null, (record) => (sentLength += plaintextLength12(suite, record.fragment.length)));
  return { recv: recv.data, serverRecords: recv.records, clientRecords, alpn, sent: null, sentLength, sentPartly: null, handshake: { ...handshake, clientFinished: null } };
}
