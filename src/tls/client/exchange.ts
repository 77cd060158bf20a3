/**
 * One HTTP exchange over our own TLS 1.3 client: handshake, the request written in epochs (epochs.ts), the answer
 * read (answer.ts), close_notify. What comes out for the proof: the answer, the server's handshake and application
 * traffic secrets (as proxy mode reveals them), and the client's epochs with the record keys of the revealed ones
 * only. Failures are AppErrors: the target's TLS refused or broken (tls_unsupported during the handshake,
 * target_request_failed after it), its chain or signature refused (tls_untrusted), its silence (target_timeout),
 * a refused key update (target_key_update_refused).
 */
import { isIP } from "node:net";
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError } from "../../core/errors.ts";
import { parseTrustAnchors } from "../certificates.ts";
import { type CipherSuite, cipherSuiteOf } from "../suites.ts";
import { type AnswerLimits, readAnswer } from "./answer.ts";
import { MAX_CLIENT_EPOCHS } from "../verify-client-epochs.ts";
import { type ClientEpoch, EpochWriter, type RequestPart, epochCount } from "./epochs.ts";
import { handshake } from "./handshake.ts";
import { IncomingRecords } from "./incoming.ts";
import type { KeyShareGroup } from "./key-shares.ts";
import { RecordWriter } from "./record-writer.ts";
import type { ByteTransport } from "./transport.ts";

export type { ByteTransport } from "./transport.ts";
export { duplexTransport } from "./transport.ts";
export type { ClientEpoch, RequestPart } from "./epochs.ts";
export type { KeyShareGroup } from "./key-shares.ts";
export { isTls12Target } from "./hello.ts";

export const TLS13_SUITES = ["TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"] as const;
export type Tls13SuiteName = (typeof TLS13_SUITES)[number];
const SUITE_IDS: Readonly<Record<Tls13SuiteName, number>> = { TLS_AES_128_GCM_SHA256: 0x1301, TLS_AES_256_GCM_SHA384: 0x1302, TLS_CHACHA20_POLY1305_SHA256: 0x1303 };

export interface Tls13ClientOptions extends AnswerLimits {
  /** The host name: SNI and the name the certificate must carry. */
  serverName: string;
  /** Trusted roots (PEM; an entry may be a bundle): the notary's set. */
  trustAnchorsPem: readonly string[];
  /** Longest silence from the target while the handshake or an answer is owed. */
  responseTimeoutMs: number;
  /** Key shares sent in the first ClientHello (default X25519); X25519 and P-256 are both supported, so a server may ask for the other with a HelloRetryRequest. */
  keyShares?: readonly KeyShareGroup[];
  /** Suites offered, preferred first (default all three). */
  suites?: readonly Tls13SuiteName[];
  /** The clock certificates are checked against (default: now). */
  now?: () => Date;
  /**
   * The request waits for this (the handshake runs meanwhile): written once it resolves; when it rejects, the exchange
   * ends with its error and no byte of the request is sent.
   */
  requestAfter?: Promise<unknown>;
}

export interface Tls13Exchange {
  /** The IANA name of the suite. */
  cipherSuite: string;
  /** The request as sent (every part, hidden ones included): for the prover only. */
  sent: Uint8Array;
  /** The answer's bytes as the server sent them. */
  recv: Uint8Array;
  /** Session tickets the server sent after the handshake, ignored (no resumption). */
  sessionTickets: number;
  /** What proxy mode reveals of the server's side. */
  serverSecrets: { handshake: Uint8Array; application: Uint8Array };
  /** The client's epochs in order: record key and IV of the revealed ones, and where each one's records are. */
  clientEpochs: ClientEpoch[];
}

/** The request parts, refused before anything is sent when they cannot be written. */
function checkRequest(parts: readonly RequestPart[], serverName: string): void {
  if (isIP(serverName)) throw new AppError("tls_unsupported", "the TLS 1.3 client needs a host name (SNI and the certificate name); the target is an IP address");
  if (parts.length === 0 || parts.every((part) => part.bytes.length === 0)) throw new AppError("internal", "the TLS 1.3 client was given an empty request");
  if (epochCount(parts) > MAX_CLIENT_EPOCHS) {
    throw new AppError("invalid_redaction", `the request has too many hidden parts: a connection carries at most ${MAX_CLIENT_EPOCHS} client epochs (a key update before and after each hidden part)`);
  }
}

/** A failure as the caller reports it: a malformed message from the target is its fault, not the prover's. */
function clientFailure(error: unknown, established: boolean): unknown {
  if (!(error instanceof AppError) || error.code !== "transcript_invalid") return error;
  return new AppError(established ? "target_request_failed" : "tls_unsupported", `the target broke the TLS protocol: ${error.message}`);
}

export async function runTls13Exchange(transport: ByteTransport, request: readonly RequestPart[], options: Tls13ClientOptions): Promise<Tls13Exchange> {
  checkRequest(request, options.serverName);
  const suites: CipherSuite[] = (options.suites ?? TLS13_SUITES).map((name) => cipherSuiteOf(SUITE_IDS[name], "TLS1.3"));
  const anchors = parseTrustAnchors(options.trustAnchorsPem);
  const incoming = new IncomingRecords(transport, options.responseTimeoutMs);
  const writer = new RecordWriter(transport);
  let established = false;
  try {
    const session = await handshake(incoming, writer, {
      serverName: options.serverName,
      anchors,
      now: options.now?.() ?? new Date(),
      suites,
      keyShares: options.keyShares ?? ["x25519"],
    });
    established = true;
    await options.requestAfter;
    const epochs = new EpochWriter(session.suite, session.clientApplicationSecret, writer, !request[0]!.hidden);
    epochs.writeRequest(request);
    writer.flush();
    const { recv, sessionTickets } = await readAnswer(incoming, session.suite, session.serverApplicationSecret, epochs, writer, options);
    epochs.closeNotify();
    writer.flush();
    transport.end();
    return {
      cipherSuite: session.suite.name,
      sent: concatBytes(...request.map((part) => part.bytes)),
      recv,
      sessionTickets,
      serverSecrets: { handshake: session.serverHandshakeSecret, application: session.serverApplicationSecret },
      clientEpochs: epochs.shown(),
    };
  } catch (error) {
    transport.end();
    throw clientFailure(error, established);
  }
}
