/**
 * A TLS 1.3 server made of the project's own TLS pieces (src/tls), for what no real server does on demand: refuse
 * the client's KeyUpdate (with an alert, or by closing), ask for a key update itself, send a HelloRetryRequest or
 * extensions the client must refuse, a broken signature or Finished. One suite, X25519 or P-256, an ECDSA P-256
 * certificate; it answers each request once its head is complete, then closes.
 */
import { X509Certificate, randomBytes, sign } from "node:crypto";
import { type Server, type Socket, createServer } from "node:net";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { Extension, clientKeyShares, parseClientHello } from "../src/tls/handshake.ts";
import { applicationSecrets, digest, finishedVerifyData, handshakeSecrets, nextTrafficSecret, trafficKeys } from "../src/tls/key-schedule.ts";
import { MAX_PLAINTEXT, RecordOpener, RecordSealer } from "../src/tls/record-protection.ts";
import { ContentType, HandshakeAssembler, type HandshakeMessage, HandshakeType, handshakeMessage } from "../src/tls/records.ts";
import { messageHash } from "../src/tls/session-start.ts";
import { type CipherSuite, cipherSuiteOf } from "../src/tls/suites.ts";
import { uint16Bytes, vectorBytes } from "../src/tls/wire.ts";
import { IncomingRecords } from "../src/tls/client/incoming.ts";
import { GROUP_IDS, type KeyShareGroup, newKeyShare } from "../src/tls/client/key-shares.ts";
import { CHANGE_CIPHER_SPEC, plainRecord } from "../src/tls/client/record-writer.ts";
import { duplexTransport } from "../src/tls/client/transport.ts";
import type { ServerIdentity } from "./tls-fixture.ts";

export interface RawServerQuirks {
  /** The group it agrees on (default X25519); a client without a share of it gets a HelloRetryRequest. */
  group?: KeyShareGroup;
  /** A HelloRetryRequest naming this group id whatever the client sent (the client must refuse a bad one). */
  helloRetryGroup?: number;
  /** A cookie in the HelloRetryRequest, which the second ClientHello must echo. */
  cookie?: boolean;
  /** Bytes sent after the HelloRetryRequest's record (a ChangeCipherSpec, anything); with `endAfterHelloRetry` it stops there. */
  afterHelloRetry?: Uint8Array;
  endAfterHelloRetry?: boolean;
  /** Bytes in the HelloRetryRequest's record after it; it stops there. */
  helloRetryTrailer?: Uint8Array;
  /** Answers the second ClientHello with another HelloRetryRequest. */
  secondHelloRetry?: boolean;
  /** This public value in its ServerHello's key share instead of its own (a bad point); it stops there. */
  serverKeyShare?: Uint8Array;
  /** A ServerHello with these fields instead (a session id not echoed, a suite not offered, a compression); it stops there. */
  serverHelloEdit?: { sessionId?: Uint8Array; cipherSuite?: number; compression?: number };
  /** Answers with a TLS 1.2 ServerHello (ECDHE-ECDSA-AES128-GCM-SHA256, no supported_versions) and stops. */
  tls12?: boolean;
  /** On the client's KeyUpdate: follow it (default), answer with alert unexpected_message, or close the connection. */
  onClientKeyUpdate?: "follow" | "alert" | "close";
  /** Asks for a client certificate (CertificateRequest with a context), which the client must answer (with none). */
  certificateRequest?: boolean;
  /** The CertificateRequest's body as sent instead (with `certificateRequest`). */
  certificateRequestBody?: Uint8Array;
  /** The EncryptedExtensions' body as sent instead of the extensions' vector. */
  encryptedExtensionsBody?: Uint8Array;
  /** Extensions added to EncryptedExtensions: [type, body] pairs. */
  encryptedExtensions?: [number, Uint8Array][];
  /**
   * The server's encrypted flight as sent instead of its one record: given its messages (EncryptedExtensions through
   * Finished, each whole) and the sealer of its handshake key (sealing in order), the bytes to send after its
   * ChangeCipherSpec; it stops there unless `flightThenServe`.
   */
  flight?: (messages: Uint8Array[], seal: (type: number, content: Uint8Array) => Uint8Array) => Uint8Array;
  flightThenServe?: boolean;
  /** Bytes sent in the ServerHello's record after it. */
  afterServerHello?: Uint8Array;
  /** One byte of the CertificateVerify signature or of the Finished changed. */
  breakSignature?: boolean;
  breakFinished?: boolean;
  /** NewSessionTicket messages sent after the handshake (default 2). */
  tickets?: number;
  /** A KeyUpdate of its own before the answer; "requested" asks the client for one. */
  keyUpdateBeforeAnswer?: "requested" | "not_requested";
  /** A NewSessionTicket after that KeyUpdate in the same record (which a KeyUpdate must end). */
  ticketAfterKeyUpdate?: boolean;
  /** Answer record size (default the largest). */
  answerRecordSize?: number;
  answer(request: Uint8Array): Uint8Array;
}

export interface RawServer {
  port: number;
  /** Each connection's request as it decrypted it, hidden parts included. */
  requests: Uint8Array[];
  /** KeyUpdates from clients, counted. */
  clientKeyUpdates: number;
  /** Each connection's server traffic secrets, as a key log would show them (hex). */
  serverSecrets: { handshake: string; application: string }[];
  stop(): Promise<void>;
}

const SUITE: CipherSuite = cipherSuiteOf(0x1301, "TLS1.3");
const HELLO_RETRY_RANDOM = hexToBytes("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c");
const HEAD_END = utf8ToBytes("\r\n\r\n");

const ext = (type: number, body: Uint8Array) => concatBytes(uint16Bytes(type), vectorBytes(2, body));

function serverHello(random: Uint8Array, sessionId: Uint8Array, extensions: Uint8Array[], edit: RawServerQuirks["serverHelloEdit"] = {}): Uint8Array {
  const body = concatBytes(
    uint16Bytes(0x0303),
    random,
    vectorBytes(1, edit.sessionId ?? sessionId),
    uint16Bytes(edit.cipherSuite ?? SUITE.id),
    Uint8Array.of(edit.compression ?? 0),
    vectorBytes(2, ...extensions),
  );
  return handshakeMessage(HandshakeType.serverHello, body);
}

const certificatesOf = (chainPem: string): Uint8Array[] =>
  (chainPem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map((pem) => new Uint8Array(new X509Certificate(pem).raw));

async function nextMessage(incoming: IncomingRecords, assembler: HandshakeAssembler, open?: RecordOpener): Promise<HandshakeMessage | null> {
  for (;;) {
    const message = assembler.next();
    if (message) return message;
    const record = await incoming.next();
    if (!record) return null;
    if (record.type === ContentType.changeCipherSpec) continue;
    assembler.push(open ? open.open(record).content : record.fragment);
  }
}

const flip = (bytes: Uint8Array): Uint8Array => {
  const out = bytes.slice();
  out[out.length - 1] = (out[out.length - 1] ?? 0) ^ 1;
  return out;
};

/** The hellos, a HelloRetryRequest when called for: the ECDHE secret and the transcript through ServerHello, or null to stop. */
async function hellos(incoming: IncomingRecords, socket: Socket, quirks: RawServerQuirks) {
  const plain = new HandshakeAssembler();
  const first = await nextMessage(incoming, plain);
  if (!first) return null;
  let hello = parseClientHello(first.body);
  if (quirks.tls12) {
    const body = concatBytes(uint16Bytes(0x0303), randomBytes(32), vectorBytes(1, hello.sessionId), uint16Bytes(0xc02b), Uint8Array.of(0), vectorBytes(2));
    socket.write(plainRecord(ContentType.handshake, handshakeMessage(HandshakeType.serverHello, body)));
    return null;
  }
  let transcript = [first.raw];
  const group = quirks.group ?? "x25519";
  const shareOf = (extensions: Map<number, Uint8Array>) => clientKeyShares(extensions.get(Extension.keyShare) ?? new Uint8Array(2)).find((e) => e.group === GROUP_IDS[group]);
  const retryGroup = quirks.helloRetryGroup ?? (shareOf(hello.extensions) ? null : GROUP_IDS[group]);
  if (retryGroup !== null) {
    const cookie = quirks.cookie ? [ext(Extension.cookie, vectorBytes(2, randomBytes(16)))] : [];
    const cookieEchoed = (extensions: Map<number, Uint8Array>) => !cookie[0] || Buffer.from(extensions.get(Extension.cookie) ?? []).equals(Buffer.from(cookie[0].subarray(4)));
    const retry = serverHello(HELLO_RETRY_RANDOM, hello.sessionId, [ext(Extension.supportedVersions, uint16Bytes(0x0304)), ext(Extension.keyShare, uint16Bytes(retryGroup)), ...cookie]);
    socket.write(plainRecord(ContentType.handshake, concatBytes(retry, quirks.helloRetryTrailer ?? new Uint8Array(0))));
    if (quirks.afterHelloRetry) socket.write(quirks.afterHelloRetry);
    if (quirks.endAfterHelloRetry || quirks.helloRetryTrailer) return null;
    transcript = [messageHash(SUITE.hash, first.raw), retry];
    const second = await nextMessage(incoming, plain);
    if (!second) return null;
    if (quirks.secondHelloRetry) {
      socket.write(plainRecord(ContentType.handshake, retry));
      return null;
    }
    transcript.push(second.raw);
    hello = parseClientHello(second.body);
    if (!cookieEchoed(hello.extensions)) return null;
  }
  const clientShare = shareOf(hello.extensions);
  if (!clientShare) return null;
  const share = newKeyShare(group);
  const sharedSecret = share.agree(clientShare.keyExchange);
  const publicValue = quirks.serverKeyShare ?? share.publicKey;
  const extensions = [ext(Extension.supportedVersions, uint16Bytes(0x0304)), ext(Extension.keyShare, concatBytes(uint16Bytes(GROUP_IDS[group]), vectorBytes(2, publicValue)))];
  const sh = serverHello(randomBytes(32), hello.sessionId, extensions, quirks.serverHelloEdit);
  socket.write(plainRecord(ContentType.handshake, concatBytes(sh, quirks.afterServerHello ?? new Uint8Array(0))));
  if (quirks.afterServerHello) return null;
  if (quirks.serverKeyShare || quirks.serverHelloEdit) return null;
  transcript.push(sh);
  return { sharedSecret, transcript };
}

/** The server's flight: EncryptedExtensions, Certificate, CertificateVerify, Finished, in one record. */
function serverFlight(identity: ServerIdentity, quirks: RawServerQuirks, transcript: Uint8Array[], serverHandshake: Uint8Array): Uint8Array {
  const extensions = (quirks.encryptedExtensions ?? []).map(([type, body]) => ext(type, body));
  const messages = [handshakeMessage(HandshakeType.encryptedExtensions, quirks.encryptedExtensionsBody ?? vectorBytes(2, ...extensions))];
  if (quirks.certificateRequest) {
    const signatureAlgorithms = ext(Extension.signatureAlgorithms, vectorBytes(2, uint16Bytes(0x0403)));
    messages.push(handshakeMessage(HandshakeType.certificateRequest, quirks.certificateRequestBody ?? concatBytes(vectorBytes(1, Uint8Array.of(7, 7)), vectorBytes(2, signatureAlgorithms))));
  }
  const entries = certificatesOf(identity.chainPem).map((der) => concatBytes(vectorBytes(3, der), vectorBytes(2)));
  messages.push(handshakeMessage(HandshakeType.certificate, concatBytes(vectorBytes(1), vectorBytes(3, ...entries))));
  const signed = concatBytes(new Uint8Array(64).fill(0x20), utf8ToBytes("TLS 1.3, server CertificateVerify"), Uint8Array.of(0), digest(SUITE.hash, ...transcript, ...messages));
  let signature: Uint8Array = new Uint8Array(sign("sha256", signed, identity.leafKeyPem));
  if (quirks.breakSignature) signature = flip(signature);
  messages.push(handshakeMessage(HandshakeType.certificateVerify, concatBytes(uint16Bytes(0x0403), vectorBytes(2, signature))));
  let finished = finishedVerifyData(SUITE.hash, serverHandshake, digest(SUITE.hash, ...transcript, ...messages));
  if (quirks.breakFinished) finished = flip(finished);
  messages.push(handshakeMessage(HandshakeType.finished, finished));
  transcript.push(...messages);
  const sealer = new RecordSealer(SUITE, trafficKeys(SUITE, serverHandshake));
  if (quirks.flight) return quirks.flight(messages, (type, content) => sealer.seal(type, content));
  return sealer.seal(ContentType.handshake, concatBytes(...messages));
}

/**
 * The client's flight: an empty Certificate echoing the request's context when one was asked for, then a Finished
 * that matches the transcript under the client handshake secret.
 */
async function clientFlightChecks(incoming: IncomingRecords, transcript: Uint8Array[], clientSecret: Uint8Array, quirks: RawServerQuirks): Promise<boolean> {
  const assembler = new HandshakeAssembler();
  const opener = new RecordOpener(SUITE, trafficKeys(SUITE, clientSecret), "client handshake key", "client");
  const clientTranscript = [...transcript];
  if (quirks.certificateRequest) {
    const certificate = await nextMessage(incoming, assembler, opener);
    const emptyWithContext = concatBytes(vectorBytes(1, Uint8Array.of(7, 7)), vectorBytes(3));
    if (certificate?.type !== HandshakeType.certificate || !Buffer.from(certificate.body).equals(Buffer.from(emptyWithContext))) return false;
    clientTranscript.push(certificate.raw);
  }
  const finished = await nextMessage(incoming, assembler, opener);
  const expected = finishedVerifyData(SUITE.hash, clientSecret, digest(SUITE.hash, ...clientTranscript));
  return finished?.type === HandshakeType.finished && Buffer.from(finished.body).equals(Buffer.from(expected));
}

const ticket = () => handshakeMessage(HandshakeType.newSessionTicket, concatBytes(Uint8Array.of(0, 0, 0x1c, 0x20), randomBytes(4), vectorBytes(1, randomBytes(8)), vectorBytes(2, randomBytes(64)), vectorBytes(2)));

/** One connection, start to end. */
async function serve(socket: Socket, identity: ServerIdentity, quirks: RawServerQuirks, server: RawServer): Promise<void> {
  const incoming = new IncomingRecords(duplexTransport(socket), 30_000);
  const start = await hellos(incoming, socket, quirks);
  if (!start) return void socket.end();
  const { transcript } = start;
  const secrets = handshakeSecrets(SUITE.hash, start.sharedSecret, digest(SUITE.hash, ...transcript));
  socket.write(concatBytes(CHANGE_CIPHER_SPEC, serverFlight(identity, quirks, transcript, secrets.server)));
  if (quirks.flight && !quirks.flightThenServe) return void socket.end();
  const application = applicationSecrets(SUITE.hash, secrets.handshake, digest(SUITE.hash, ...transcript));
  server.serverSecrets.push({ handshake: bytesToHex(secrets.server), application: bytesToHex(application.server) });
  if (!(await clientFlightChecks(incoming, transcript, secrets.client, quirks))) return void socket.end();
  let send = new RecordSealer(SUITE, trafficKeys(SUITE, application.server));
  let serverSecret = application.server;
  socket.write(concatBytes(...Array.from({ length: quirks.tickets ?? 2 }, () => send.seal(ContentType.handshake, ticket()))));
  let clientSecret = application.client;
  let receive = new RecordOpener(SUITE, trafficKeys(SUITE, clientSecret), "client application key", "client");
  const request: Uint8Array[] = [];
  for (let record = await incoming.next(); record; record = await incoming.next()) {
    const { type, content } = receive.open(record);
    if (type === ContentType.alert) break;
    if (type === ContentType.handshake && content[0] === HandshakeType.keyUpdate) {
      server.clientKeyUpdates++;
      if (quirks.onClientKeyUpdate === "alert") return void socket.end(send.seal(ContentType.alert, Uint8Array.of(2, 10)));
      if (quirks.onClientKeyUpdate === "close") return void socket.destroy();
      clientSecret = nextTrafficSecret(SUITE.hash, clientSecret);
      receive = new RecordOpener(SUITE, trafficKeys(SUITE, clientSecret), "client application key", "client");
      continue;
    }
    request.push(content);
    const sofar = concatBytes(...request);
    if (Buffer.from(sofar).indexOf(HEAD_END) < 0) continue;
    server.requests.push(sofar);
    const out: Uint8Array[] = [];
    if (quirks.keyUpdateBeforeAnswer) {
      const keyUpdate = handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(quirks.keyUpdateBeforeAnswer === "requested" ? 1 : 0));
      out.push(send.seal(ContentType.handshake, quirks.ticketAfterKeyUpdate ? concatBytes(keyUpdate, ticket()) : keyUpdate));
      serverSecret = nextTrafficSecret(SUITE.hash, serverSecret);
      send = new RecordSealer(SUITE, trafficKeys(SUITE, serverSecret));
    }
    const answer = quirks.answer(sofar);
    const size = quirks.answerRecordSize ?? MAX_PLAINTEXT;
    for (let at = 0; at < answer.length; at += size) out.push(send.seal(ContentType.applicationData, answer.subarray(at, at + size)));
    out.push(send.seal(ContentType.alert, Uint8Array.of(1, 0)));
    socket.write(concatBytes(...out));
    request.length = 0;
  }
  socket.end();
}

export async function startRawTls13Server(identity: ServerIdentity, quirks: RawServerQuirks): Promise<RawServer> {
  const sockets = new Set<Socket>();
  const raw: RawServer = { port: 0, requests: [], clientKeyUpdates: 0, serverSecrets: [], stop: async () => {} };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    serve(socket, identity, quirks, raw).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  raw.port = typeof address === "object" && address ? address.port : 0;
  raw.stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return raw;
}
