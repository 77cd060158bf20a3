/**
 * The clear start of a relayed session: the client's first message must be its ClientHello and the server's its
 * ServerHello, which fix the version, the randoms and the cipher suite. Both the verifier and the prover's key
 * reveal start here.
 */
import { AppError } from "../errors.ts";
import { type ClientHello, Extension, type ServerHello, parseClientHello, parseServerHello } from "./handshake.ts";
import { HandshakeAssembler, HandshakeType, RecordStream, nextPlainMessage, splitRecords } from "./records.ts";
import { type CipherSuite, cipherSuiteOf } from "./suites.ts";
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
  /** The hellos as sent (header and body): the start of the transcript. */
  clientHelloRaw: Uint8Array;
  serverHelloRaw: Uint8Array;
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
}

export function readHellos(bytes: RelayedBytes): SessionStart {
  const client = new RecordStream(splitRecords(bytes.clientToServer, "client").records, "client");
  const server = new RecordStream(splitRecords(bytes.serverToClient, "server").records, "server");
  const clientAssembler = new HandshakeAssembler();
  const serverAssembler = new HandshakeAssembler();
  const clientHelloMessage = nextPlainMessage(client, clientAssembler, "ClientHello");
  if (clientHelloMessage.type !== HandshakeType.clientHello) throw malformed("the client's first message is not a ClientHello");
  const serverHelloMessage = nextPlainMessage(server, serverAssembler, "ServerHello");
  if (serverHelloMessage.type !== HandshakeType.serverHello) throw malformed("the server's first message is not a ServerHello");
  const serverHello = parseServerHello(serverHelloMessage.body);
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
    clientHelloRaw: clientHelloMessage.raw,
    serverHelloRaw: serverHelloMessage.raw,
    clientHello: parseClientHello(clientHelloMessage.body),
    serverHello,
    suite: cipherSuiteOf(serverHello.cipherSuite, serverHello.version),
  };
}
