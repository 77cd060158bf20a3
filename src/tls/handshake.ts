/**
 * The handshake messages the verifier and the TLS 1.3 client read (RFC 8446 §4, RFC 5246 §7.4, RFC 8422 §5.4):
 * ClientHello/ServerHello (version, random, session id, suites, extensions: server_name 0, supported_versions 43,
 * pre_shared_key 41, key_share 51; a HelloRetryRequest is a ServerHello with a fixed random whose key_share names
 * a group only), Certificate (TLS 1.3 entries carry a request context and per-entry extensions),
 * ServerKeyExchange for ECDHE (curve type 3 = named curve, curve id, point, then signature scheme and signature
 * over client_random + server_random + those parameters), CertificateVerify (scheme, signature).
 */
import { bytesToHex } from "@noble/hashes/utils.js";
import { AppError } from "../core/errors.ts";
import type { TlsVersionName } from "./suites.ts";
import { WireReader, hex16, malformed } from "./wire.ts";

export const Extension = {
  serverName: 0,
  supportedGroups: 10,
  signatureAlgorithms: 13,
  alpn: 16,
  preSharedKey: 41,
  earlyData: 42,
  supportedVersions: 43,
  cookie: 44,
  pskKeyExchangeModes: 45,
  keyShare: 51,
} as const;

/** ServerHello.random of a HelloRetryRequest: SHA-256("HelloRetryRequest") (RFC 8446 §4.1.3). */
const HELLO_RETRY_RANDOM = "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c";

function readExtensions(reader: WireReader, what: string): Map<number, Uint8Array> {
  const extensions = new Map<number, Uint8Array>();
  if (reader.remaining === 0) return extensions;
  const list = new WireReader(reader.vector(2), `${what} extensions`);
  while (list.remaining > 0) {
    const type = list.uint(2);
    if (extensions.has(type)) throw malformed(`${what} repeats extension ${type}`);
    extensions.set(type, list.vector(2));
  }
  return extensions;
}

export interface ClientHello {
  random: Uint8Array;
  sessionId: Uint8Array;
  /** The host_name of the server_name extension, or null without one. */
  serverName: string | null;
  /** The offered cipher suites, in order. */
  cipherSuites: number[];
  extensions: Map<number, Uint8Array>;
}

const uint16List = (bytes: Uint8Array, what: string): number[] => {
  const r = new WireReader(bytes, what);
  const list: number[] = [];
  while (r.remaining > 0) list.push(r.uint(2));
  return list;
};

export function parseClientHello(body: Uint8Array): ClientHello {
  const r = new WireReader(body, "ClientHello");
  r.uint(2);
  const random = r.bytesOf(32);
  const sessionId = r.vector(1);
  const cipherSuites = uint16List(r.vector(2), "ClientHello cipher suites");
  r.vector(1);
  const extensions = readExtensions(r, "ClientHello");
  r.end();
  const sni = extensions.get(Extension.serverName);
  return { random, sessionId, serverName: sni ? hostNameOf(sni) : null, cipherSuites, extensions };
}

/** A key_share entry: the group and the sender's public value (empty in a HelloRetryRequest). */
export interface KeyShareEntry {
  group: number;
  keyExchange: Uint8Array;
}

/** The entries of a ClientHello's key_share extension. */
export function clientKeyShares(extension: Uint8Array): KeyShareEntry[] {
  const list = new WireReader(new WireReader(extension, "key_share").vector(2), "key_share list");
  const entries: KeyShareEntry[] = [];
  while (list.remaining > 0) entries.push({ group: list.uint(2), keyExchange: list.vector(2) });
  return entries;
}

/** The ServerHello's key_share: one entry; in a HelloRetryRequest, the group alone. */
export function serverKeyShare(extension: Uint8Array, helloRetry: boolean): KeyShareEntry {
  const r = new WireReader(extension, "key_share");
  const group = r.uint(2);
  const keyExchange = helloRetry ? new Uint8Array(0) : r.vector(2);
  r.end();
  return { group, keyExchange };
}

function hostNameOf(extension: Uint8Array): string | null {
  const list = new WireReader(new WireReader(extension, "server_name").vector(2), "server_name list");
  while (list.remaining > 0) {
    const nameType = list.uint(1);
    const name = list.vector(2);
    if (nameType === 0) return new TextDecoder().decode(name);
  }
  return null;
}

export interface ServerHello {
  version: TlsVersionName;
  random: Uint8Array;
  sessionId: Uint8Array;
  cipherSuite: number;
  compression: number;
  extensions: Map<number, Uint8Array>;
  /** A HelloRetryRequest: the server asks for another ClientHello (RFC 8446 §4.1.4). */
  helloRetry: boolean;
}

export function parseServerHello(body: Uint8Array): ServerHello {
  const r = new WireReader(body, "ServerHello");
  const legacyVersion = r.uint(2);
  const random = r.bytesOf(32);
  const sessionId = r.vector(1);
  const cipherSuite = r.uint(2);
  const compression = r.uint(1);
  const extensions = readExtensions(r, "ServerHello");
  r.end();
  const selected = extensions.get(Extension.supportedVersions);
  const version = selected ? new WireReader(selected, "supported_versions").uint(2) : legacyVersion;
  if (version !== 0x0303 && version !== 0x0304) {
    throw new AppError("tls_unsupported", `proxy mode accepts TLS 1.2 and 1.3 only; the server chose version ${hex16(version)}`);
  }
  const helloRetry = bytesToHex(random) === HELLO_RETRY_RANDOM;
  if (helloRetry && version !== 0x0304) throw malformed("the server sent a HelloRetryRequest for another version than TLS 1.3");
  return { version: version === 0x0304 ? "TLS1.3" : "TLS1.2", random, sessionId, cipherSuite, compression, extensions, helloRetry };
}

/** The extensions of a TLS 1.3 EncryptedExtensions message. */
export function parseEncryptedExtensions(body: Uint8Array): Map<number, Uint8Array> {
  const r = new WireReader(body, "EncryptedExtensions");
  const extensions = readExtensions(r, "EncryptedExtensions");
  r.end();
  return extensions;
}

/** The application protocol the server chose by ALPN (RFC 7301: a list of exactly one name), or null when it chose none. */
export function selectedProtocol(extensions: Map<number, Uint8Array>): string | null {
  const alpn = extensions.get(Extension.alpn);
  if (!alpn) return null;
  const r = new WireReader(alpn, "application_layer_protocol_negotiation");
  const list = new WireReader(r.vector(2), "ALPN protocol list");
  r.end();
  const name = list.vector(1);
  list.end();
  return new TextDecoder("latin1").decode(name);
}

/** The DER certificates of a Certificate message, leaf first. */
export function parseCertificates(body: Uint8Array, version: TlsVersionName): Uint8Array[] {
  const r = new WireReader(body, "Certificate");
  if (version === "TLS1.3") r.vector(1);
  const list = new WireReader(r.vector(3), "certificate list");
  r.end();
  const certificates: Uint8Array[] = [];
  while (list.remaining > 0) {
    certificates.push(list.vector(3));
    if (version === "TLS1.3") list.vector(2);
  }
  if (certificates.length === 0) throw new AppError("tls_unsupported", "the server sent no certificate; proxy mode needs one");
  return certificates;
}

export interface SignedBy {
  /** The SignatureScheme (RFC 8446 §4.2.3; for TLS 1.2 the same codes as hash + signature algorithm). */
  scheme: number;
  signature: Uint8Array;
}

export interface ServerKeyExchange extends SignedBy {
  /** The ECDH parameters as sent: what the signature covers after the two randoms. */
  params: Uint8Array;
}

export function parseServerKeyExchange(body: Uint8Array): ServerKeyExchange {
  const r = new WireReader(body, "ServerKeyExchange");
  const curveType = r.uint(1);
  if (curveType !== 3) throw new AppError("tls_unsupported", "the server's ECDHE parameters do not name a curve");
  r.uint(2);
  const point = r.vector(1);
  const params = body.subarray(0, 4 + point.length);
  const scheme = r.uint(2);
  const signature = r.vector(2);
  r.end();
  return { params, scheme, signature };
}

export function parseCertificateVerify(body: Uint8Array): SignedBy {
  const r = new WireReader(body, "CertificateVerify");
  const scheme = r.uint(2);
  const signature = r.vector(2);
  r.end();
  return { scheme, signature };
}
