import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import { AppError } from "../../../src/core/errors.ts";
import { Extension, type ServerHello, clientKeyShares, parseClientHello, parseServerHello } from "../../../src/tls/handshake.ts";
import { type HelloOffer, checkHelloRetry, checkServerHello, clientHelloMessage, isTls12Target, retriedOffer } from "../../../src/tls/client/hello.ts";
import { GROUP_IDS, newKeyShare } from "../../../src/tls/client/key-shares.ts";
import { SIGNATURE_SCHEMES } from "../../../src/tls/signatures.ts";
import { cipherSuiteOf } from "../../../src/tls/suites.ts";
import { uint16Bytes, vectorBytes } from "../../../src/tls/wire.ts";
import { expectRefusal } from "../support/refusal.ts";

/**
 * The client's hellos as bytes, and its checks of the server's: each ServerHello here is parsed from the bytes a
 * server would send (parseServerHello), changed in the one field a case is about.
 */

const HELLO_RETRY_RANDOM = hexToBytes("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c");
const SUITES = [0x1301, 0x1302, 0x1303].map((id) => cipherSuiteOf(id, "TLS1.3"));
const offer = (over: Partial<HelloOffer> = {}): HelloOffer => ({
  random: new Uint8Array(randomBytes(32)),
  sessionId: new Uint8Array(randomBytes(32)),
  serverName: "target.tlsproof.test",
  suites: SUITES,
  shares: [newKeyShare("x25519")],
  ...over,
});

const ext = (type: number, body: Uint8Array) => concatBytes(uint16Bytes(type), vectorBytes(2, body));
const SUPPORTED_VERSIONS = ext(Extension.supportedVersions, uint16Bytes(0x0304));

/** A ServerHello (or, with the retry random, a HelloRetryRequest) as a server writes it, parsed. */
function serverHello(
  sent: HelloOffer,
  extensions: Uint8Array[],
  { random = new Uint8Array(randomBytes(32)), suite = 0x1301, sessionId = sent.sessionId, compression = 0 }: { random?: Uint8Array; suite?: number; sessionId?: Uint8Array; compression?: number } = {},
): ServerHello {
  return parseServerHello(concatBytes(uint16Bytes(0x0303), random, vectorBytes(1, sessionId), uint16Bytes(suite), Uint8Array.of(compression), vectorBytes(2, ...extensions)));
}
const retryFor = (sent: HelloOffer, extensions: Uint8Array[], fields: Parameters<typeof serverHello>[2] = {}) =>
  serverHello(sent, [SUPPORTED_VERSIONS, ...extensions], { random: HELLO_RETRY_RANDOM, ...fields });
const groupShare = (group: number) => ext(Extension.keyShare, uint16Bytes(group));
const cookieOf = (cookie: Uint8Array) => ext(Extension.cookie, vectorBytes(2, cookie));

describe("the ClientHello", () => {
  test("offers TLS 1.3 only, its suites, shares, signature schemes, ALPN http/1.1, SNI, psk_dhe_ke; a cookie when given one", () => {
    const sent = offer({ shares: [newKeyShare("x25519"), newKeyShare("p256")] });
    const message = clientHelloMessage(sent, null);
    expect(message[0]).toBe(1);
    const hello = parseClientHello(message.subarray(4));
    expect(hello.random).toEqual(sent.random);
    expect(hello.sessionId).toEqual(sent.sessionId);
    expect(hello.serverName).toBe("target.tlsproof.test");
    expect(hello.cipherSuites).toEqual([0x1301, 0x1302, 0x1303]);
    const e = hello.extensions;
    expect([...e.keys()]).toEqual([Extension.serverName, Extension.supportedGroups, Extension.signatureAlgorithms, Extension.alpn, Extension.supportedVersions, Extension.pskKeyExchangeModes, Extension.keyShare]);
    expect(e.get(Extension.supportedGroups)).toEqual(vectorBytes(2, Uint8Array.of(0, 0x1d, 0, 0x17)));
    expect(e.get(Extension.signatureAlgorithms)).toEqual(vectorBytes(2, ...SIGNATURE_SCHEMES.map(uint16Bytes)));
    expect(e.get(Extension.alpn)).toEqual(vectorBytes(2, vectorBytes(1, new TextEncoder().encode("http/1.1"))));
    expect(e.get(Extension.supportedVersions)).toEqual(Uint8Array.of(2, 3, 4));
    expect(e.get(Extension.pskKeyExchangeModes)).toEqual(Uint8Array.of(1, 1));
    expect(clientKeyShares(e.get(Extension.keyShare)!)).toEqual(sent.shares.map((share) => ({ group: GROUP_IDS[share.group], keyExchange: share.publicKey })));
    // The legacy version and the null compression method.
    expect(message.subarray(4, 6)).toEqual(Uint8Array.of(3, 3));
    const cookie = Uint8Array.of(7, 8, 9);
    expect(parseClientHello(clientHelloMessage(sent, cookie).subarray(4)).extensions.get(Extension.cookie)).toEqual(vectorBytes(2, cookie));
  });
});

describe("a HelloRetryRequest", () => {
  test("for a group the client supports and did not send: the second offer carries a fresh share of it alone", () => {
    const sent = offer();
    const retry = checkHelloRetry(retryFor(sent, [groupShare(0x0017)]), sent);
    expect(retry).toEqual({ suite: SUITES[0]!, group: "p256", cookie: null });
    const again = retriedOffer(sent, retry);
    expect(again.shares.map((share) => share.group)).toEqual(["p256"]);
    expect(again.random).toBe(sent.random);
    expect(again.sessionId).toBe(sent.sessionId);
  });

  test("with a cookie only: the same shares, the cookie echoed", () => {
    const sent = offer();
    const retry = checkHelloRetry(retryFor(sent, [cookieOf(Uint8Array.of(1, 2, 3))]), sent);
    expect(retry).toEqual({ suite: SUITES[0]!, group: null, cookie: Uint8Array.of(1, 2, 3) });
    expect(retriedOffer(sent, retry).shares).toBe(sent.shares);
  });

  test.each([
    ["asking for nothing", [], {}, /^the target's HelloRetryRequest asks for no change to the ClientHello$/],
    ["for a group the client lacks", [groupShare(0x0018)], {}, /^the target's HelloRetryRequest asks for key share group 0x0018, which the client does not support \(X25519, P-256\)$/],
    ["for the group already sent", [groupShare(0x001d)], {}, /^the target's HelloRetryRequest asks for a x25519 key share, which the client already sent$/],
    ["with an extension not asked for", [groupShare(0x0017), ext(Extension.alpn, new Uint8Array(0))], {}, /^the target's HelloRetryRequest carries extension 16, which the client did not ask for$/],
    ["accepting a pre-shared key", [ext(Extension.preSharedKey, uint16Bytes(0))], {}, /^the target's HelloRetryRequest accepts a pre-shared key or early data, which the client never offered$/],
    ["choosing a suite not offered", [groupShare(0x0017)], { suite: 0x1304 }, /^the target's HelloRetryRequest chose cipher suite 0x1304, which the client did not offer$/],
    ["choosing a compression", [groupShare(0x0017)], { compression: 1 }, /^the target's HelloRetryRequest chose a compression method$/],
  ] as const)("%s: refused", (_name, extensions, fields, message) => {
    const sent = offer();
    expectRefusal(() => checkHelloRetry(retryFor(sent, [...extensions], fields), sent), "tls_unsupported", message);
  });

  test("with a cookie cut short: malformed", () => {
    const sent = offer();
    expectRefusal(() => checkHelloRetry(retryFor(sent, [ext(Extension.cookie, Uint8Array.of(0, 5, 1))]), sent), "transcript_invalid", /^cookie is truncated$/);
  });

  test("with the client's session id cut short: refused", () => {
    const sent = offer();
    expectRefusal(() => checkHelloRetry(retryFor(sent, [groupShare(0x0017)], { sessionId: sent.sessionId.subarray(0, 31) }), sent), "tls_unsupported", /^the target's HelloRetryRequest does not echo the client's session id$/);
  });

  test("for a group among several the client already sent: refused", () => {
    const sent = offer({ shares: [newKeyShare("x25519"), newKeyShare("p256")] });
    expectRefusal(() => checkHelloRetry(retryFor(sent, [groupShare(0x0017)]), sent), "tls_unsupported", /^the target's HelloRetryRequest asks for a p256 key share, which the client already sent$/);
  });

  test("with another session id of the same length: refused", () => {
    const sent = offer();
    const other = sent.sessionId.slice();
    other[31]! ^= 1;
    expectRefusal(() => checkHelloRetry(retryFor(sent, [groupShare(0x0017)], { sessionId: other }), sent), "tls_unsupported", /does not echo the client's session id/);
  });
});

describe("the ServerHello", () => {
  const shareOf = (group: number, publicKey: Uint8Array) => ext(Extension.keyShare, concatBytes(uint16Bytes(group), vectorBytes(2, publicKey)));

  test("agrees on the offered suite and the shared secret of the share answered", () => {
    const sent = offer({ shares: [newKeyShare("x25519"), newKeyShare("p256")] });
    const server = newKeyShare("p256");
    const agreed = checkServerHello(serverHello(sent, [SUPPORTED_VERSIONS, shareOf(0x0017, server.publicKey)], { suite: 0x1302 }), sent, null);
    expect(agreed.suite).toEqual(SUITES[1]!);
    expect(agreed.sharedSecret).toEqual(server.agree(sent.shares[1]!.publicKey));
  });

  test("a suite the client did not offer", () => {
    const sent = offer({ suites: SUITES.slice(0, 1) });
    const hello = serverHello(sent, [SUPPORTED_VERSIONS, shareOf(0x001d, newKeyShare("x25519").publicKey)], { suite: 0x1302 });
    expectRefusal(() => checkServerHello(hello, sent, null), "tls_unsupported", /^the target's ServerHello chose cipher suite 0x1302, which the client did not offer$/);
  });

  test("a TLS 1.2 ServerHello: refused as a TLS 1.2 target, which the caller may prove otherwise", () => {
    const sent = offer();
    const tls12 = parseServerHello(concatBytes(uint16Bytes(0x0303), new Uint8Array(randomBytes(32)), vectorBytes(1, sent.sessionId), uint16Bytes(0xc02b), Uint8Array.of(0), vectorBytes(2)));
    let error: unknown;
    try {
      checkServerHello(tls12, sent, null);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).message).toBe("the target chose TLS1.2 though the client offered TLS 1.3 only");
    expect(isTls12Target(error)).toBe(true);
    expect(isTls12Target(new AppError("tls_unsupported", "other"))).toBe(false);
  });

  test.each([
    ["a HelloRetryRequest where the ServerHello was due", "first", /^the target's HelloRetryRequest is malformed$/],
    ["a second HelloRetryRequest", "second", /^the target sent a second HelloRetryRequest$/],
  ] as const)("%s", (_name, when, message) => {
    const sent = offer();
    const retry = when === "second" ? checkHelloRetry(retryFor(sent, [groupShare(0x0017)]), sent) : null;
    expectRefusal(() => checkServerHello(retryFor(sent, [groupShare(0x0017)]), sent, retry), "tls_unsupported", message);
  });

  test("after a HelloRetryRequest, another suite than the retry's", () => {
    const sent = offer();
    const retry = checkHelloRetry(retryFor(sent, [groupShare(0x0017)]), sent);
    const again = retriedOffer(sent, retry);
    const hello = serverHello(again, [SUPPORTED_VERSIONS, shareOf(0x0017, newKeyShare("p256").publicKey)], { suite: 0x1303 });
    expectRefusal(() => checkServerHello(hello, again, retry), "tls_unsupported", /^the target's ServerHello chose another cipher suite than its HelloRetryRequest$/);
    const same = serverHello(again, [SUPPORTED_VERSIONS, shareOf(0x0017, newKeyShare("p256").publicKey)]);
    expect(checkServerHello(same, again, retry).suite).toEqual(SUITES[0]!);
  });

  test.each([
    ["without a key share", () => [SUPPORTED_VERSIONS], /^the target's ServerHello has no key share$/],
    ["with a share of a group not sent", () => [SUPPORTED_VERSIONS, shareOf(0x0017, newKeyShare("p256").publicKey)], /^the target's ServerHello answers with a key share of group 0x0017, which the client did not send$/],
    ["with a cookie", () => [SUPPORTED_VERSIONS, shareOf(0x001d, newKeyShare("x25519").publicKey), cookieOf(Uint8Array.of(1))], /^the target's ServerHello carries extension 44, which the client did not ask for$/],
  ] as const)("%s: refused", (_name, extensions, message) => {
    const sent = offer();
    expectRefusal(() => checkServerHello(serverHello(sent, extensions()), sent, null), "tls_unsupported", message);
  });
});
