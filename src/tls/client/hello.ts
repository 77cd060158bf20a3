/**
 * The client's hellos and its checks of the server's (RFC 8446 §4.1-4.2). It offers TLS 1.3 only, the three
 * AEAD suites, key shares for the groups asked (X25519 and P-256 supported), the signature schemes the verifier
 * accepts, ALPN http/1.1, SNI, and psk_dhe_ke (so servers send the session tickets it then ignores) but never a
 * PSK. A HelloRetryRequest may ask for a supported group it has no share for, and carry a cookie to echo; the
 * ServerHello must echo the session id, pick an offered suite and answer with a share of an offered group.
 */
import { AppError } from "../../core/errors.ts";
import { Extension, type ServerHello, serverKeyShare } from "../handshake.ts";
import { HandshakeType, handshakeMessage } from "../records.ts";
import { SIGNATURE_SCHEMES } from "../signatures.ts";
import { type CipherSuite, cipherSuiteOf } from "../suites.ts";
import { WireReader, hex16, uint16Bytes, vectorBytes } from "../wire.ts";
import { GROUP_IDS, type KeyShare, type KeyShareGroup, groupOfId, newKeyShare } from "./key-shares.ts";

const TLS13 = 0x0304;
const LEGACY_VERSION = 0x0303;
const PSK_DHE_KE = 1;
const HTTP11 = new TextEncoder().encode("http/1.1");
/** Every group the client can agree on: offered in supported_groups whatever shares are sent. */
const SUPPORTED_GROUPS: readonly KeyShareGroup[] = ["x25519", "p256"];

export interface HelloOffer {
  random: Uint8Array;
  /** 32 random bytes (middlebox compatibility mode, RFC 8446 §D.4); the server must echo them. */
  sessionId: Uint8Array;
  serverName: string;
  suites: readonly CipherSuite[];
  shares: KeyShare[];
}

const extension = (type: number, body: Uint8Array): Uint8Array => new Uint8Array([...uint16Bytes(type), ...vectorBytes(2, body)]);
const uint16s = (values: readonly number[]): Uint8Array => new Uint8Array(values.flatMap((value) => [...uint16Bytes(value)]));

/** The ClientHello handshake message (header included); with a cookie when answering a HelloRetryRequest. */
export function clientHelloMessage(offer: HelloOffer, cookie: Uint8Array | null): Uint8Array {
  const name = new TextEncoder().encode(offer.serverName);
  const shares = offer.shares.map((share) => new Uint8Array([...uint16Bytes(GROUP_IDS[share.group]), ...vectorBytes(2, share.publicKey)]));
  const extensions = [
    extension(Extension.serverName, vectorBytes(2, Uint8Array.of(0), vectorBytes(2, name))),
    extension(Extension.supportedGroups, vectorBytes(2, uint16s(SUPPORTED_GROUPS.map((group) => GROUP_IDS[group])))),
    extension(Extension.signatureAlgorithms, vectorBytes(2, uint16s(SIGNATURE_SCHEMES))),
    extension(Extension.alpn, vectorBytes(2, vectorBytes(1, HTTP11))),
    extension(Extension.supportedVersions, vectorBytes(1, uint16Bytes(TLS13))),
    extension(Extension.pskKeyExchangeModes, vectorBytes(1, Uint8Array.of(PSK_DHE_KE))),
    extension(Extension.keyShare, vectorBytes(2, ...shares)),
    ...(cookie ? [extension(Extension.cookie, vectorBytes(2, cookie))] : []),
  ];
  const body = new Uint8Array([
    ...uint16Bytes(LEGACY_VERSION),
    ...offer.random,
    ...vectorBytes(1, offer.sessionId),
    ...vectorBytes(2, uint16s(offer.suites.map((suite) => suite.id))),
    ...vectorBytes(1, Uint8Array.of(0)),
    ...vectorBytes(2, ...extensions),
  ]);
  return handshakeMessage(HandshakeType.clientHello, body);
}

const refused = (message: string): AppError => new AppError("tls_unsupported", message);

/** A target that speaks TLS 1.2 only: the caller may prove it over another client (node:tls), see isTls12Target. */
export const tls12Target = (message: string): AppError => new AppError("tls_unsupported", message, { targetTlsVersion: "TLS1.2" });

/** Whether the client failed because the target does not speak TLS 1.3 (its ServerHello or a protocol_version alert). */
export const isTls12Target = (error: unknown): boolean => error instanceof AppError && error.details?.["targetTlsVersion"] === "TLS1.2";

/** The offered suite the server picked, or a refusal. */
function pickedSuite(hello: ServerHello, offer: HelloOffer, what: string): CipherSuite {
  if (hello.version !== "TLS1.3") {
    throw tls12Target(`the target chose ${hello.version} though the client offered TLS 1.3 only`);
  }
  const suite = offer.suites.find((s) => s.id === hello.cipherSuite);
  if (!suite) throw refused(`the target's ${what} chose cipher suite ${hex16(hello.cipherSuite)}, which the client did not offer`);
  if (hello.compression !== 0) throw refused(`the target's ${what} chose a compression method`);
  if (hello.sessionId.length !== offer.sessionId.length || !hello.sessionId.every((b, i) => b === offer.sessionId[i])) {
    throw refused(`the target's ${what} does not echo the client's session id`);
  }
  return suite;
}

/** Extensions a message may carry: any other is one the client never asked for (RFC 8446 §4.2). */
export function onlyExtensions(extensions: Map<number, Uint8Array>, allowed: readonly number[], what: string): void {
  for (const type of extensions.keys()) {
    if (type === Extension.preSharedKey || type === Extension.earlyData) throw refused(`the target's ${what} accepts a pre-shared key or early data, which the client never offered`);
    if (!allowed.includes(type)) throw refused(`the target's ${what} carries extension ${type}, which the client did not ask for`);
  }
}

export interface RetryRequest {
  suite: CipherSuite;
  /** The group to send a share for instead, or null when the server asks for its cookie only. */
  group: KeyShareGroup | null;
  cookie: Uint8Array | null;
}

/** A HelloRetryRequest's demands, refused unless they change the ClientHello as RFC 8446 §4.1.4 allows. */
export function checkHelloRetry(retry: ServerHello, offer: HelloOffer): RetryRequest {
  const suite = pickedSuite(retry, offer, "HelloRetryRequest");
  onlyExtensions(retry.extensions, [Extension.supportedVersions, Extension.keyShare, Extension.cookie], "HelloRetryRequest");
  const shareExtension = retry.extensions.get(Extension.keyShare);
  const cookieExtension = retry.extensions.get(Extension.cookie);
  const cookie = cookieExtension ? new WireReader(cookieExtension, "cookie").vector(2) : null;
  if (!shareExtension) {
    if (!cookie) throw refused("the target's HelloRetryRequest asks for no change to the ClientHello");
    return { suite, group: null, cookie };
  }
  const id = serverKeyShare(shareExtension, true).group;
  const group = groupOfId(id);
  if (!group) throw refused(`the target's HelloRetryRequest asks for key share group ${hex16(id)}, which the client does not support (X25519, P-256)`);
  if (offer.shares.some((share) => share.group === group)) throw refused(`the target's HelloRetryRequest asks for a ${group} key share, which the client already sent`);
  return { suite, group, cookie };
}

/** The offer for the second ClientHello: the same but for the one share asked for. */
export const retriedOffer = (offer: HelloOffer, retry: RetryRequest): HelloOffer => ({
  ...offer,
  shares: retry.group ? [newKeyShare(retry.group)] : offer.shares,
});

export interface Agreed {
  suite: CipherSuite;
  sharedSecret: Uint8Array;
}

/** The suite and ECDHE secret of a ServerHello, which must fit the offer (and the retry it follows). */
export function checkServerHello(hello: ServerHello, offer: HelloOffer, retry: RetryRequest | null): Agreed {
  if (hello.helloRetry) throw refused(retry ? "the target sent a second HelloRetryRequest" : "the target's HelloRetryRequest is malformed");
  const suite = pickedSuite(hello, offer, "ServerHello");
  if (retry && suite.id !== retry.suite.id) throw refused("the target's ServerHello chose another cipher suite than its HelloRetryRequest");
  onlyExtensions(hello.extensions, [Extension.supportedVersions, Extension.keyShare], "ServerHello");
  const shareExtension = hello.extensions.get(Extension.keyShare);
  if (!shareExtension) throw refused("the target's ServerHello has no key share");
  const entry = serverKeyShare(shareExtension, false);
  const share = offer.shares.find((s) => GROUP_IDS[s.group] === entry.group);
  if (!share) throw refused(`the target's ServerHello answers with a key share of group ${hex16(entry.group)}, which the client did not send`);
  return { suite: cipherSuiteOf(suite.id, "TLS1.3"), sharedSecret: share.agree(entry.keyExchange) };
}
