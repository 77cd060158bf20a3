/**
 * Proxy mode's transcript verifier: what a notary runs on the bytes it relayed between a prover and a TLS server,
 * with the keys the prover reveals. Pure: no network, no clock but `expect.now`.
 * Checks: the ClientHello names the expected server; ECDHE + AEAD, a full handshake (no resumption, PSK,
 * renegotiation; a TLS 1.3 HelloRetryRequest is followed into the transcript); the certificate chain is valid for that name at `now` up to a trust anchor;
 * the server's signature binds its key share (TLS 1.2 ServerKeyExchange; TLS 1.3 CertificateVerify and Finished);
 * every server record authenticates under the revealed keys in order, ending at most with close_notify. The client's
 * side, when revealed: TLS 1.3 traffic secrets (its Finished checked) or epochs (verify-client-epochs.ts); a TLS 1.2
 * master secret, from which the verifier derives every key and checks both Finished messages (verify-tls12-master.ts).
 */
import { hexToBytes } from "@noble/hashes/utils.js";
import { AppError } from "../core/errors.ts";
import { checkCertificateChain, parseTrustAnchors } from "./certificates.ts";
import { hashLength } from "./key-schedule.ts";
import type { RevealedKeys } from "./revealed-keys.ts";
import { type DataRecords, type RelayedBytes, type SessionData, type SessionStart, readHellos } from "./session-start.ts";
import type { CipherSuite, TlsVersionName } from "./suites.ts";
import { verifyTls12 } from "./verify-tls12.ts";
import { verifyTls12MasterSecret } from "./verify-tls12-master.ts";
import type { PartlyRevealed } from "./session-start.ts";
import { type Tls13Secrets, verifyTls13 } from "./verify-tls13.ts";

export type { DataRecords, RelayedBytes } from "./session-start.ts";
export type { TlsVersionName } from "./suites.ts";
export type { PartlyRevealed } from "./session-start.ts";
export { keysOfEpochExchange, keysToReveal } from "./keys-to-reveal.ts";
export { type RevealedKeys, revealedKeysSchema } from "./revealed-keys.ts";

export interface SessionExpectations {
  serverName: string;
  trustAnchorsPem: readonly string[];
  now: Date;
}

export interface VerifiedSession {
  tlsVersion: TlsVersionName;
  /** The IANA name of the cipher suite. */
  cipherSuite: string;
  serverName: string;
  /** Every application-data byte the server sent, decrypted and authenticated, in order (the HTTP answer). */
  recv: Uint8Array;
  /** Where the server's first application data and its close_notify lay in the bytes it sent (relayed offsets). */
  serverRecords: DataRecords;
  /** Where the client's alert lay (any alert, in TLS 1.2 without its keys); null when unreadable (TLS 1.3 without its keys). */
  clientRecords: DataRecords | null;
  /** The application protocol the server chose by ALPN (EncryptedExtensions in TLS 1.3, ServerHello in 1.2), or null. */
  alpn: string | null;
  /** The client's application data when client keys were revealed and checked; else null. */
  sent: Uint8Array | null;
  /**
   * TLS 1.3 with the client's epochs revealed: its application data with the hidden epochs' bytes zeroed, and
   * those spans; else null. Only the revealed bytes are known; a hidden span's length counts records' sizes.
   */
  sentPartly: PartlyRevealed | null;
  /**
   * Length of the client's application data: exact when sent is known and in TLS 1.2; in TLS 1.3 without client
   * keys, from record sizes (an upper bound: a closing alert counts too).
   */
  sentLength: number;
  /** Seconds since the epoch: when the handshake was seen (expectations.now). */
  connectionTime: number;
}

/** Bytes of a revealed hex value of the length the suite needs (the message never shows the value). */
function revealed(hex: string, name: string, length: number): Uint8Array {
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new AppError("transcript_invalid", `the revealed ${name} is not hex`);
  if (hex.length !== 2 * length) throw new AppError("transcript_invalid", `the revealed ${name} has ${hex.length / 2} bytes; the cipher suite needs ${length}`);
  return hexToBytes(hex);
}

function bothOrNeither<T>(a: T | undefined, b: T | undefined, what: string): [T, T] | null {
  if (a === undefined && b === undefined) return null;
  if (a === undefined || b === undefined) throw new AppError("transcript_invalid", `the revealed client keys are incomplete: ${what}`);
  return [a, b];
}

/**
 * Why a ClientHello whose server name ends in a dot is refused: SNI never carries one (RFC 6066 §3), and a session's
 * name has none (src/core/server-name.ts); otherwise names compare case-blind, as DNS does. Short: a relay's close
 * reason carries it.
 */
export const dottedSniReason = (serverName: string): string => `the ClientHello's SNI ends in a dot (RFC 6066 sends none); expected ${serverName}`;

/** The hellos, checked to name the expected server, and the chain check for its certificate. */
function startOf(bytes: RelayedBytes, expect: SessionExpectations) {
  const anchors = parseTrustAnchors(expect.trustAnchorsPem);
  const start = readHellos(bytes);
  const sni = start.clientHello.serverName;
  if (sni?.endsWith(".")) throw new AppError("tls_untrusted", dottedSniReason(expect.serverName));
  if (sni === null || sni.toLowerCase() !== expect.serverName.toLowerCase()) {
    throw new AppError("tls_untrusted", `the ClientHello names ${sni === null ? "no server" : `server ${JSON.stringify(sni)}`}, not ${expect.serverName}`);
  }
  const checkChain = (chainDer: Uint8Array[]) => checkCertificateChain(chainDer, expect.serverName, anchors, expect.now);
  return { start, checkChain };
}

function verified(start: SessionStart, data: SessionData, expect: SessionExpectations): VerifiedSession {
  return {
    tlsVersion: start.suite.version,
    cipherSuite: start.suite.name,
    serverName: expect.serverName,
    recv: data.recv,
    serverRecords: data.serverRecords,
    clientRecords: data.clientRecords,
    alpn: data.alpn,
    sent: data.sent,
    sentLength: data.sentLength,
    sentPartly: data.sentPartly,
    connectionTime: Math.floor(expect.now.getTime() / 1000),
  };
}

export function verifyRelayedSession(bytes: RelayedBytes, keys: RevealedKeys, expect: SessionExpectations): VerifiedSession {
  const { start, checkChain } = startOf(bytes, expect);
  const { suite } = start;
  if (keys.version !== suite.version) {
    throw new AppError("transcript_invalid", `the revealed keys are for ${keys.version}, but the session is ${suite.version}`);
  }
  const data = keys.version === "TLS1.3" ? verify13(start, keys, suite, checkChain) : verify12(start, keys, suite, checkChain);
  return verified(start, data, expect);
}

type ChainCheck = Parameters<typeof verifyTls13>[2];

type Tls13Keys = Extract<RevealedKeys, { version: "TLS1.3" }>;

/** The client's side of the TLS 1.3 keys: its traffic secrets, its epochs, or nothing. */
function client13(keys: Tls13Keys, suite: CipherSuite): Tls13Secrets["client"] {
  const length = hashLength(suite.hash);
  const client = bothOrNeither(keys.clientHandshakeTrafficSecret, keys.clientApplicationTrafficSecret, "both client traffic secrets are needed");
  if (client && keys.clientEpochs) throw new AppError("transcript_invalid", "the revealed client keys are either traffic secrets or epochs, not both");
  if (client) return { handshake: revealed(client[0], "client handshake traffic secret", length), application: revealed(client[1], "client application traffic secret", length) };
  if (!keys.clientEpochs) return null;
  return {
    epochs: keys.clientEpochs.map((epoch, i) => {
      const pair = bothOrNeither(epoch.key, epoch.iv, `client epoch ${i}'s key and IV go together`);
      const what = `client epoch ${i}'s`;
      return { records: epoch.records, keys: pair && { key: revealed(pair[0], `${what} key`, suite.keyLength), iv: revealed(pair[1], `${what} IV`, suite.ivLength) } };
    }),
  };
}

function verify13(start: ReturnType<typeof readHellos>, keys: Tls13Keys, suite: CipherSuite, checkChain: ChainCheck) {
  const length = hashLength(suite.hash);
  return verifyTls13(
    start,
    {
      serverHandshake: revealed(keys.serverHandshakeTrafficSecret, "server handshake traffic secret", length),
      serverApplication: revealed(keys.serverApplicationTrafficSecret, "server application traffic secret", length),
      client: client13(keys, suite),
    },
    checkChain,
  );
}

/** TLS 1.2: the master secret alone (the request revealed, the keys bound to the handshake), or the server's write key and IV. */
function verify12(start: ReturnType<typeof readHellos>, keys: Extract<RevealedKeys, { version: "TLS1.2" }>, suite: CipherSuite, checkChain: ChainCheck) {
  const server = bothOrNeither(keys.serverWriteKey, keys.serverWriteIv, "the server write key and IV go together");
  if (keys.masterSecret !== undefined) {
    if (server) throw new AppError("transcript_invalid", "the revealed TLS 1.2 keys are either the master secret or the server write key and IV, not both");
    return verifyTls12MasterSecret(start, revealed(keys.masterSecret, "master secret", 48), checkChain);
  }
  if (!server) throw new AppError("transcript_invalid", "the revealed TLS 1.2 keys hold neither the master secret nor the server write key and IV");
  return verifyTls12(
    start,
    { server: { key: revealed(server[0], "server write key", suite.keyLength), iv: revealed(server[1], "server write IV", suite.ivLength) }, client: null },
    checkChain,
  );
}
