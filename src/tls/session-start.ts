/**
 * The clear start of a relayed session: the client's first message must be its ClientHello and the server's its
 * ServerHello, which fix the version, the randoms and the cipher suite. In TLS 1.3 the server may first answer
 * with a HelloRetryRequest (RFC 8446 §4.1.4): then the client sends a second ClientHello (same random, same server
 * name), the server its ServerHello with the same suite, and the transcript starts with message_hash(first
 * ClientHello), the HelloRetryRequest and the second ClientHello. A ChangeCipherSpec may follow either side's first
 * message (middlebox compatibility). Both the verifier and the prover's key reveal start here.
 */
import { sameBytes } from "../base/bytes.ts";
import { AppError } from "../core/errors.ts";
import type { ByteRange } from "../core/transcript.ts";
import { type ClientHello, Extension, type ServerHello, parseClientHello, parseServerHello } from "./handshake.ts";
import { digest } from "./key-schedule.ts";
import {
  ContentType,
  HandshakeAssembler,
  type HandshakeMessage,
  HandshakeType,
  RecordStream,
  checkChangeCipherSpec,
  handshakeMessage,
  nextPlainMessage,
  splitRecords,
} from "./records.ts";
import { type CipherSuite, type HashName, cipherSuiteOf } from "./suites.ts";
import { malformed } from "./wire.ts";

/** Both directions of one TCP connection, exactly as the notary relayed them. */
export interface RelayedBytes {
  clientToServer: Uint8Array;
  serverToClient: Uint8Array;
}

export interface SessionStart {
  client: RecordStream;
  server: RecordStream;
  /** Each side's handshake reassembly, positioned after its hello. */
  clientAssembler: HandshakeAssembler;
  serverAssembler: HandshakeAssembler;
  /** The handshake messages the transcript hash starts with, through the ServerHello (see above for a retry). */
  transcript: Uint8Array[];
  /** The ClientHello the ServerHello answers (the second after a HelloRetryRequest). */
  clientHello: ClientHello;
  serverHello: ServerHello;
  suite: CipherSuite;
}

/**
 * Where, in one side's relayed bytes, its first record of application data starts, and its close_notify record (null
 * when it sent none): what the notary needs to tell a close the server chose from one the client provoked.
 */
export interface DataRecords {
  dataStart: number | null;
  /** Its close_notify record; any alert record when the side's records were not opened (TLS 1.2 without its key). */
  closeNotifyAt: number | null;
}

/** The client's application data as the revealed epochs show it. */
export interface PartlyRevealed {
  /** Every byte, the hidden ones zero. */
  bytes: Uint8Array;
  /** The hidden spans, sorted and merged. */
  hidden: ByteRange[];
}

/** What a version's verifier gives back: the application data of each side, and where the server's lay. */
export interface SessionData {
  recv: Uint8Array;
  serverRecords: DataRecords;
  /** The same of the client's side; null when its records cannot be read (TLS 1.3 without the client's keys). */
  clientRecords: DataRecords | null;
  /** The application protocol the server chose by ALPN, or null. */
  alpn: string | null;
  sent: Uint8Array | null;
  sentLength: number;
  /** TLS 1.3 with the client's epochs revealed: the request less its hidden spans; else null. */
  sentPartly: PartlyRevealed | null;
}

/** The transcript's stand-in for the first ClientHello after a HelloRetryRequest. */
export const messageHash = (hash: HashName, clientHello: Uint8Array): Uint8Array => handshakeMessage(HandshakeType.messageHash, digest(hash, clientHello));

/** Skips one ChangeCipherSpec record (middlebox compatibility) when it comes next. */
function skipChangeCipherSpec(stream: RecordStream, assembler: HandshakeAssembler): void {
  const record = stream.peek();
  if (record?.type !== ContentType.changeCipherSpec || !assembler.empty) return;
  stream.take();
  checkChangeCipherSpec(record, stream.sender);
}

function nextHello(stream: RecordStream, assembler: HandshakeAssembler, type: number, name: string): HandshakeMessage {
  const message = nextPlainMessage(stream, assembler, name);
  if (message.type !== type) throw malformed(`the ${stream.sender} sent handshake message type ${message.type} where its ${name} was due`);
  return message;
}

export function readHellos(bytes: RelayedBytes): SessionStart {
  const client = new RecordStream(splitRecords(bytes.clientToServer, "client").records, "client");
  const server = new RecordStream(splitRecords(bytes.serverToClient, "server").records, "server");
  const clientAssembler = new HandshakeAssembler();
  const serverAssembler = new HandshakeAssembler();
  const firstClientHello = nextHello(client, clientAssembler, HandshakeType.clientHello, "ClientHello");
  let clientHelloMessage = firstClientHello;
  let serverHelloMessage = nextHello(server, serverAssembler, HandshakeType.serverHello, "ServerHello");
  let serverHello = parseServerHello(serverHelloMessage.body);
  let transcript: Uint8Array[] = [firstClientHello.raw];
  if (serverHello.helloRetry) {
    const retry = { message: serverHelloMessage, hello: serverHello };
    skipChangeCipherSpec(client, clientAssembler);
    skipChangeCipherSpec(server, serverAssembler);
    clientHelloMessage = nextHello(client, clientAssembler, HandshakeType.clientHello, "second ClientHello");
    serverHelloMessage = nextHello(server, serverAssembler, HandshakeType.serverHello, "ServerHello");
    serverHello = parseServerHello(serverHelloMessage.body);
    checkRetry(parseClientHello(firstClientHello.body), parseClientHello(clientHelloMessage.body), retry.hello, serverHello);
    const { hash } = cipherSuiteOf(serverHello.cipherSuite, serverHello.version);
    transcript = [messageHash(hash, firstClientHello.raw), retry.message.raw, clientHelloMessage.raw];
  }
  if (serverHello.version === "TLS1.3") {
    if (serverHello.extensions.has(Extension.preSharedKey)) {
      throw new AppError("tls_unsupported", "the server resumed a TLS 1.3 session with a pre-shared key; proxy mode needs a full handshake");
    }
    if (!serverHello.extensions.has(Extension.keyShare)) {
      throw new AppError("tls_unsupported", "the server's TLS 1.3 ServerHello has no key share; proxy mode needs an ephemeral key exchange");
    }
  }
  return {
    client,
    server,
    clientAssembler,
    serverAssembler,
    transcript: [...transcript, serverHelloMessage.raw],
    clientHello: parseClientHello(clientHelloMessage.body),
    serverHello,
    suite: cipherSuiteOf(serverHello.cipherSuite, serverHello.version),
  };
}

/** The retried hellos must belong to one handshake: same client random and server name, one retry, one suite. */
function checkRetry(first: ClientHello, second: ClientHello, retry: ServerHello, serverHello: ServerHello): void {
  if (!sameBytes(first.random, second.random)) throw malformed("the client's second ClientHello has another random than its first");
  if (first.serverName !== second.serverName) throw malformed("the client's second ClientHello names another server than its first");
  if (serverHello.helloRetry) throw malformed("the server sent a second HelloRetryRequest");
  if (serverHello.version !== "TLS1.3") throw malformed("the server chose TLS 1.3 in its HelloRetryRequest and another version in its ServerHello");
  if (serverHello.cipherSuite !== retry.cipherSuite) throw malformed("the server's ServerHello chose another cipher suite than its HelloRetryRequest");
}
