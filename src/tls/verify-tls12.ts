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
import { AppError } from "../errors.ts";
import { parseCertificates, parseServerKeyExchange } from "./handshake.ts";
import type { TrafficKeys } from "./key-schedule.ts";
import { RecordOpener, plaintextLength12 } from "./record-protection.ts";
import {
  ContentType,
  type HandshakeAssembler,
  type HandshakeMessage,
  HandshakeType,
  type RecordStream,
  alertError,
  checkChangeCipherSpec,
  isCloseNotify,
  nextPlainMessage,
} from "./records.ts";
import type { SessionStart } from "./session-start.ts";
import { checkSignature } from "./signatures.ts";
import type { CipherSuite } from "./suites.ts";
import { malformed } from "./wire.ts";
import { sameBytes } from "../bytes.ts";
import type { DirectionData } from "./verify-tls13.ts";

export interface Tls12Keys {
  server: TrafficKeys;
  client: TrafficKeys | null;
}

/** What a client may send in clear after its ClientHello. */
const CLIENT_FLIGHT: ReadonlySet<number> = new Set([HandshakeType.certificate, HandshakeType.clientKeyExchange, HandshakeType.certificateVerify]);

const resumed = (): AppError =>
  new AppError("tls_unsupported", "the server resumed a TLS 1.2 session; proxy mode needs a full handshake with the server's certificate");

/** Clear handshake messages up to ChangeCipherSpec (NewSessionTicket, or the client's key exchange), checked by `accept`. */
function readUntilChangeCipherSpec(stream: RecordStream, assembler: HandshakeAssembler, accept: (message: HandshakeMessage) => void): void {
  for (;;) {
    const message = assembler.next();
    if (message) {
      accept(message);
      continue;
    }
    const record = stream.peek();
    if (record?.type === ContentType.changeCipherSpec) {
      stream.take();
      checkChangeCipherSpec(record, stream.sender);
      return;
    }
    nextPlainMessageInto(stream, assembler);
  }
}

function nextPlainMessageInto(stream: RecordStream, assembler: HandshakeAssembler): void {
  const record = stream.take();
  if (!record) throw malformed(`the ${stream.sender}'s bytes end before its ChangeCipherSpec`);
  if (record.type === ContentType.alert) throw alertError(stream.sender, record.fragment);
  if (record.type !== ContentType.handshake) throw malformed(`the ${stream.sender} sent a record of type ${record.type} before its ChangeCipherSpec`);
  assembler.push(record.fragment);
}

/** The protected side after ChangeCipherSpec: Finished, then data and alerts; with no opener, only lengths. */
function readProtected(stream: RecordStream, suite: CipherSuite, opener: RecordOpener | null): { data: Uint8Array | null; length: number } {
  const finishedRecord = stream.take();
  if (!finishedRecord) throw malformed(`the ${stream.sender}'s bytes end before its Finished`);
  if (finishedRecord.type !== ContentType.handshake) throw malformed(`the ${stream.sender}'s first protected record is not its Finished`);
  if (opener) {
    const finished = opener.open(finishedRecord).content;
    if (finished.length !== 16 || finished[0] !== HandshakeType.finished) throw malformed(`the ${stream.sender}'s Finished is malformed`);
  }
  const chunks: Uint8Array[] = [];
  let length = 0;
  let closed = false;
  for (let record = stream.take(); record; record = stream.take()) {
    if (closed) throw malformed(`the ${stream.sender} sent records after its close_notify alert`);
    if (record.type === ContentType.handshake) {
      throw new AppError("tls_unsupported", `the ${stream.sender} started a renegotiation, which proxy mode does not accept`);
    }
    if (record.type === ContentType.applicationData) {
      if (opener) chunks.push(opener.open(record).content);
      else length += plaintextLength12(suite, record.fragment.length);
    } else if (record.type === ContentType.alert) {
      const alert = opener?.open(record).content;
      if (opener && alert && !isCloseNotify(alert)) throw alertError(stream.sender, alert);
      closed = true;
    } else throw malformed(`the ${stream.sender} sent a record of type ${record.type} after its Finished`);
  }
  if (!opener) return { data: null, length };
  const data = concatBytes(...chunks);
  return { data, length: data.length };
}

export function verifyTls12(start: SessionStart, keys: Tls12Keys, checkChain: (chainDer: Uint8Array[]) => KeyObject): DirectionData {
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
  let done = nextPlainMessage(server, serverAssembler, "ServerHelloDone");
  if (done.type === HandshakeType.certificateRequest) done = nextPlainMessage(server, serverAssembler, "ServerHelloDone");
  if (done.type !== HandshakeType.serverHelloDone) throw malformed(`the server sent handshake message type ${done.type} where its ServerHelloDone was due`);
  readUntilChangeCipherSpec(server, serverAssembler, (message) => {
    if (message.type !== HandshakeType.newSessionTicket) throw malformed(`the server sent handshake message type ${message.type} before its ChangeCipherSpec`);
  });
  const recv = readProtected(server, suite, new RecordOpener(suite, keys.server, "the revealed server write key", "server")).data;
  readUntilChangeCipherSpec(start.client, start.clientAssembler, (message) => {
    if (!CLIENT_FLIGHT.has(message.type)) {
      throw malformed(`the client sent handshake message type ${message.type} before its ChangeCipherSpec`);
    }
  });
  const clientOpener = keys.client ? new RecordOpener(suite, keys.client, "the revealed client write key", "client") : null;
  const sent = readProtected(start.client, suite, clientOpener);
  return { recv: recv ?? new Uint8Array(0), sent: sent.data, sentLength: sent.length };
}
