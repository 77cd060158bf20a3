import { afterAll, describe, expect, test } from "bun:test";
import { concatBytes } from "@noble/hashes/utils.js";
import { createECDH, createHash } from "node:crypto";
import { type Server, type Socket, createServer as createTcpServer } from "node:net";
import { createServer, type Server as HttpsServer } from "node:https";
import { AppError, type ErrorCode } from "../../../src/core/errors.ts";
import { type Tls13ClientOptions, isTls12Target } from "../../../src/tls/client/exchange.ts";
import { Extension } from "../../../src/tls/handshake.ts";
import { ContentType, HandshakeType, splitRecords } from "../../../src/tls/records.ts";
import { vectorBytes } from "../../../src/tls/wire.ts";
import { readHellos } from "../../../src/tls/session-start.ts";
import { keysOfEpochExchange, verifyRelayedSession } from "../../../src/tls/verify-session.ts";
import { type RawServer, type RawServerQuirks, startRawTls13Server } from "../../../testkit/raw-tls13-server.ts";
import { type ServerIdentity, TARGET_HOST, makeUntrustedIdentities } from "../../../testkit/tls-fixture.ts";
import { startTcpProxy } from "../../../testkit/tcp-proxy.ts";
import { afterPendingWork, eventually } from "../../../testkit/wait.ts";
import { verifyIdentities } from "../support/identities.ts";
import { contains, recordedConnection, recordedExchange, requestWithHiddenCredential, scriptedTransport } from "./support.ts";

/**
 * Our TLS 1.3 client against a real TLS stack in this process (Bun's node:https, BoringSSL) and against the raw
 * test server (testkit/raw-tls13-server.ts) for what real servers do not do on demand. Every successful exchange
 * is also checked as the notary would check it, on the bytes the connection carried.
 */

const ids = verifyIdentities();
const CREDENTIAL = "Bearer sk_live_0123456789abcdef";
const stops: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  await Promise.all(stops.map((stop) => stop()));
});

const options = (over: Partial<Tls13ClientOptions> = {}): Tls13ClientOptions => ({
  serverName: TARGET_HOST,
  trustAnchorsPem: [ids.fixture.caPem],
  responseTimeoutMs: 20_000,
  maxRecvBytes: 4 * 1024 * 1024,
  ...over,
});

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Bun's HTTPS server (TLS 1.3 only), answering with the hash of the Authorization it received: proof it came whole. */
async function httpsTarget(identity: ServerIdentity, tls: { ecdhCurve?: string; minVersion?: "TLSv1.2" | "TLSv1.3"; maxVersion?: "TLSv1.2" | "TLSv1.3" } = {}) {
  const server: HttpsServer = createServer({ key: identity.leafKeyPem, cert: identity.chainPem, minVersion: "TLSv1.3", ...tls }, (request, response) => {
    response.setHeader("content-type", "text/plain");
    response.end(`authorization sha256=${sha256(request.headers.authorization ?? "")}\n`);
  });
  let requests = 0;
  server.on("request", () => requests++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stops.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const address = server.address();
  return { port: typeof address === "object" && address ? address.port : 0, requests: () => requests };
}

async function rawTarget(quirks: Partial<RawServerQuirks> = {}): Promise<RawServer> {
  const server = await startRawTls13Server(ids.ecdsa, { answer: () => new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), ...quirks });
  stops.push(() => server.stop());
  return server;
}

async function refusal(run: () => Promise<unknown>): Promise<AppError> {
  const error = await run().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

async function expectRefused(run: () => Promise<unknown>, code: ErrorCode, message: RegExp): Promise<void> {
  const error = await refusal(run);
  expect({ code: error.code, message: error.message }).toEqual({ code, message: expect.stringMatching(message) });
  expect(error.message).not.toContain(CREDENTIAL);
}

const notaryExpectations = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });

describe("a GET with a hidden credential, proven", () => {
  test("the server receives the credential whole; the notary's check shows the request less the credential, which nothing it received holds", async () => {
    const { port } = await httpsTarget(ids.ecdsa);
    const request = requestWithHiddenCredential(TARGET_HOST, CREDENTIAL, "/account?user=42");
    const exchange = await recordedExchange(port, request, options());
    expect(new TextDecoder().decode(exchange.recv)).toContain(`authorization sha256=${sha256(CREDENTIAL)}`);
    expect(exchange.clientEpochs.map((epoch) => epoch.revealed)).toEqual([true, false, true]);

    const keys = keysOfEpochExchange(exchange);
    const verified = verifyRelayedSession(exchange.relayed, keys, notaryExpectations());
    const head = new TextDecoder().decode(request[0]!.bytes);
    const credentialAt = { start: head.length, end: head.length + CREDENTIAL.length };
    expect(verified.sentPartly?.hidden).toEqual([credentialAt]);
    const expected = new Uint8Array(exchange.sent);
    expected.fill(0, credentialAt.start, credentialAt.end);
    expect(verified.sentPartly?.bytes).toEqual(expected);
    expect(verified.sent).toBeNull();
    expect(verified.recv).toEqual(exchange.recv);
    // Nothing the notary holds shows the credential: neither the keys it was given nor what they decrypt.
    expect(JSON.stringify(keys)).not.toContain(CREDENTIAL);
    expect(contains(verified.sentPartly!.bytes, CREDENTIAL)).toBe(false);
    expect(contains(exchange.relayed.clientToServer, CREDENTIAL)).toBe(false);
  });

  test("a server that prefers P-256 asks for it with a HelloRetryRequest; the client and the notary follow it", async () => {
    const { port } = await httpsTarget(ids.ecdsa, { ecdhCurve: "P-256" });
    const exchange = await recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    expect(readHellos(exchange.relayed).transcript[0]?.[0]).toBe(HandshakeType.messageHash);
    expect(new TextDecoder().decode(exchange.recv)).toContain(sha256(CREDENTIAL));
    const verified = verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
    expect(verified.sentPartly?.hidden).toHaveLength(1);
  });

  test("a P-256 key share offered first needs no retry", async () => {
    const { port } = await httpsTarget(ids.ecdsa, { ecdhCurve: "P-256" });
    const exchange = await recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options({ keyShares: ["p256"] }));
    expect(readHellos(exchange.relayed).transcript).toHaveLength(2);
    verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
  });

  test("an RSA certificate signs with RSA-PSS", async () => {
    const { port } = await httpsTarget(ids.rsa);
    const exchange = await recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    expect(new TextDecoder().decode(exchange.recv)).toContain(sha256(CREDENTIAL));
    verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
  });
});

describe("the client refuses what it cannot check, before the request leaves", () => {
  const untrusted = makeUntrustedIdentities(ids.fixture);
  test.each([
    ["a chain from another CA with the trusted root's name", "impostorCa", /does not lead to a trusted anchor/],
    ["a certificate for another host", "wrongHost", /not valid for target\.tlsproof\.test/],
    ["an expired certificate", "expired", /is not valid at/],
    ["a self-signed certificate", "selfSigned", /does not lead to a trusted anchor/],
  ] as const)("%s", async (_name, which, message) => {
    const target = await httpsTarget(untrusted[which]);
    const connection = await recordedConnection(target.port);
    const { runTls13Exchange } = await import("../../../src/tls/client/exchange.ts");
    await expectRefused(() => runTls13Exchange(connection.transport, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), "tls_untrusted", message);
    expect(target.requests()).toBe(0);
    // Only the hellos left the client.
    expect(readHellos(connection.relayed()).client.remaining).toBe(0);
  });

  test("a TLS 1.2 server: refused so that the caller can prove it otherwise", async () => {
    const { port } = await httpsTarget(ids.ecdsa, { minVersion: "TLSv1.2", maxVersion: "TLSv1.2" });
    const run = () => recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    await expectRefused(run, "tls_unsupported", /refused the TLS 1\.3 handshake with alert 70 \(protocol_version\)/);
    expect(isTls12Target(await refusal(run))).toBe(true);
  });

  test("a server that answers with a TLS 1.2 ServerHello", async () => {
    const server = await rawTarget({ tls12: true });
    const run = () => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    await expectRefused(run, "tls_unsupported", /^the target chose TLS1\.2 though the client offered TLS 1\.3 only$/);
    expect(isTls12Target(await refusal(run))).toBe(true);
  });

  test("a server whose only group the client lacks (P-384)", async () => {
    const { port } = await httpsTarget(ids.ecdsa, { ecdhCurve: "P-384" });
    const run = () => recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    await expectRefused(run, "tls_unsupported", /alert 40 \(handshake_failure\)/);
    expect(isTls12Target(await refusal(run))).toBe(false);
  });

  test.each([
    ["a CertificateVerify signature that does not verify", { breakSignature: true }, "tls_untrusted", /CertificateVerify signature does not verify/],
    ["a Finished that does not match the transcript", { breakFinished: true }, "tls_untrusted", /Finished does not match/],
    ["a HelloRetryRequest for a group already sent", { helloRetryGroup: 0x001d }, "tls_unsupported", /asks for a x25519 key share, which the client already sent/],
    ["a HelloRetryRequest for a group the client lacks", { helloRetryGroup: 0x0018 }, "tls_unsupported", /group 0x0018, which the client does not support/],
    ["a second HelloRetryRequest", { group: "p256", secondHelloRetry: true }, "tls_unsupported", /second HelloRetryRequest/],
    ["an X25519 share of low order (an all-zero shared secret)", { serverKeyShare: new Uint8Array(32) }, "tls_untrusted", /x25519 key share is not a valid public value/],
    ["an X25519 share of the wrong length", { serverKeyShare: new Uint8Array(31).fill(9) }, "tls_untrusted", /x25519 key share is not a valid public value/],
    ["a P-256 share off the curve", { group: "p256", serverKeyShare: Uint8Array.of(4, ...new Uint8Array(64).fill(1)) }, "tls_untrusted", /p256 key share is not a valid public value/],
    ["a compressed P-256 share (TLS 1.3 allows uncompressed points only)", { group: "p256", serverKeyShare: new Uint8Array(createECDH("prime256v1").generateKeys(undefined, "compressed")) }, "tls_untrusted", /p256 key share is not a valid public value/],
    ["a ServerHello that does not echo the session id", { serverHelloEdit: { sessionId: new Uint8Array(32) } }, "tls_unsupported", /does not echo the client's session id/],
    ["a ServerHello choosing a suite not offered", { serverHelloEdit: { cipherSuite: 0x1304 } }, "tls_unsupported", /chose cipher suite 0x1304, which the client did not offer/],
    ["a ServerHello choosing a compression method", { serverHelloEdit: { compression: 1 } }, "tls_unsupported", /chose a compression method/],
    ["ALPN h2 though http/1.1 was offered", { encryptedExtensions: [[Extension.alpn, new Uint8Array([0, 3, 2, 0x68, 0x32])]] }, "tls_unsupported", /application protocol "h2"/],
    ["early data accepted though none was offered", { encryptedExtensions: [[Extension.earlyData, new Uint8Array(0)]] }, "tls_unsupported", /pre-shared key or early data/],
    ["an extension the client never asked for", { encryptedExtensions: [[28, new Uint8Array([0x40, 0x00])]] }, "tls_unsupported", /extension 28, which the client did not ask for/],
  ] as const)("%s", async (_name, quirks, code, message) => {
    const server = await rawTarget(quirks as Partial<RawServerQuirks>);
    await expectRefused(() => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), code, message);
    expect(server.requests).toHaveLength(0);
  });
});

describe("after the handshake", () => {
  test.each(["alert", "close"] as const)("a server that answers the client's KeyUpdate with %s: target_key_update_refused, naming MPC mode", async (onClientKeyUpdate) => {
    const server = await rawTarget({ onClientKeyUpdate });
    await expectRefused(
      () => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()),
      "target_key_update_refused",
      onClientKeyUpdate === "alert" ? /answered with TLS alert 10 \(unexpected_message\).*MPC mode \(T-PROOF-MODE: mpc/ : /closed the connection.*MPC mode/,
    );
    expect(server.clientKeyUpdates).toBe(1);
  });

  test("the same server answers a request that needs no key update", async () => {
    const server = await rawTarget({ onClientKeyUpdate: "alert" });
    const request = [{ bytes: new TextEncoder().encode(`GET / HTTP/1.1\r\nHost: ${TARGET_HOST}\r\n\r\n`), hidden: false }];
    const exchange = await recordedExchange(server.port, request, options());
    expect(new TextDecoder().decode(exchange.recv)).toEndWith("ok");
    expect(exchange.clientEpochs).toHaveLength(1);
  });

  test("a HelloRetryRequest with a cookie, session tickets, and an answer split over many records", async () => {
    const body = "x".repeat(50_000);
    const server = await rawTarget({ group: "p256", cookie: true, tickets: 5, answerRecordSize: 700, answer: () => new TextEncoder().encode(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`) });
    const exchange = await recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    expect(new TextDecoder().decode(exchange.recv)).toEndWith(body);
    expect(new TextDecoder().decode(server.requests[0])).toContain(`Authorization: ${CREDENTIAL}\r\n`);
    const verified = verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
    expect(verified.recv).toEqual(exchange.recv);
  });

  test("a server that asks for a client certificate gets an empty Certificate before the Finished, which it checks", async () => {
    const server = await rawTarget({ certificateRequest: true });
    const exchange = await recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    expect(new TextDecoder().decode(exchange.recv)).toEndWith("ok");
    verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
  });

  test("a server's KeyUpdate asking for one: the client answers in a revealed epoch, and the notary follows both sides", async () => {
    const server = await rawTarget({ keyUpdateBeforeAnswer: "requested" });
    const exchange = await recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    expect(new TextDecoder().decode(exchange.recv)).toEndWith("ok");
    // Two updates around the hidden credential, then the one the server asked for (read by it after its answer).
    expect(await eventually(() => server.clientKeyUpdates, (n) => n === 3, 10_000)).toBe(3);
    expect(exchange.clientEpochs.map((epoch) => epoch.revealed)).toEqual([true, false, true, true]);
    const verified = verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
    expect(verified.recv).toEqual(exchange.recv);
  });

  test("a byte changed on the way, in the server's handshake flight or in its answer: the record does not authenticate", async () => {
    const server = await rawTarget({ tickets: 0 });
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: server.port });
    stops.push(() => proxy.close());
    // The ServerHello record of an X25519 handshake is 127 bytes, a ChangeCipherSpec 6: byte 140 is in the flight.
    proxy.changeByteToClient(140);
    await expectRefused(() => recordedExchange(proxy.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), "tls_unsupported", /the target broke the TLS protocol: the server's protected record 0 does not authenticate under the server handshake traffic key/);
    const clean = await recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    proxy.changeByteToClient(clean.relayed.serverToClient.length - 30);
    await expectRefused(() => recordedExchange(proxy.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), "target_request_failed", /^a TLS record of the target's answer failed its integrity check: it was changed on its way$/);
  });

  test("a server's KeyUpdate that does not end its record: refused by the client and by the notary", async () => {
    const server = await rawTarget({ keyUpdateBeforeAnswer: "not_requested", ticketAfterKeyUpdate: true });
    const connection = await recordedConnection(server.port);
    const { runTls13Exchange } = await import("../../../src/tls/client/exchange.ts");
    await expectRefused(() => runTls13Exchange(connection.transport, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), "target_request_failed", /the server's KeyUpdate is malformed or does not end its record/);
    const [secrets] = server.serverSecrets;
    const keys = { version: "TLS1.3" as const, serverHandshakeTrafficSecret: secrets!.handshake, serverApplicationTrafficSecret: secrets!.application };
    const verifying = () => verifyRelayedSession(connection.relayed(), keys, notaryExpectations());
    expect(verifying).toThrow(/the server's KeyUpdate is malformed or does not end its record/);
  });

  test("a target silent after the handshake: target_timeout", async () => {
    const accepted: Socket[] = [];
    const silent: Server = createTcpServer((socket) => void accepted.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    stops.push(() => new Promise<void>((resolve) => (accepted.forEach((socket) => socket.destroy()), silent.close(() => resolve()))));
    const address = silent.address();
    const port = typeof address === "object" && address ? address.port : 0;
    await expectRefused(() => recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options({ responseTimeoutMs: 200 })), "target_timeout", /silent for 200 ms/);
  });
});

describe("a request held back by the caller (requestAfter: proxy mode's request id claim)", () => {
  test("the handshake runs meanwhile; the request leaves once it resolves", async () => {
    const server = await rawTarget();
    let allow!: () => void;
    const allowed = new Promise<void>((resolve) => (allow = resolve));
    const running = recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options({ requestAfter: allowed }));
    // The server sent its whole flight (its application secret is derived): the handshake is done but for the client's Finished.
    expect(await eventually(() => server.serverSecrets.length, (n) => n === 1, 10_000)).toBe(1);
    await afterPendingWork();
    expect(server.requests).toHaveLength(0);
    allow();
    const exchange = await running;
    expect(new TextDecoder().decode(exchange.recv)).toEndWith("ok");
    expect(new TextDecoder().decode(server.requests[0])).toContain(`Authorization: ${CREDENTIAL}\r\n`);
    verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations());
  });

  test("when it rejects, the exchange ends with its error and no byte of the request is sent", async () => {
    const server = await rawTarget();
    const refused = new AppError("duplicate_request_id", "this request id was used before");
    const claim = Promise.reject(refused);
    claim.catch(() => {});
    const connection = await recordedConnection(server.port);
    const { runTls13Exchange } = await import("../../../src/tls/client/exchange.ts");
    expect(await refusal(() => runTls13Exchange(connection.transport, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options({ requestAfter: claim })))).toBe(refused);
    expect(server.serverSecrets).toHaveLength(1);
    // What the client sent is its handshake alone: of its protected records, at most its Finished left.
    const protectedRecords = splitRecords(connection.relayed().clientToServer, "client").records.filter((record) => record.type === ContentType.applicationData);
    expect(protectedRecords.length).toBeLessThanOrEqual(1);
  });
});

describe("a request the client refuses before anything leaves, and what it takes", () => {
  test("33 epochs (sixteen hidden parts) are within the limit: the ClientHello leaves", async () => {
    const scripted = scriptedTransport();
    const { runTls13Exchange } = await import("../../../src/tls/client/exchange.ts");
    const parts = Array.from({ length: 33 }, (_, i) => ({ bytes: new TextEncoder().encode(`p${i}`), hidden: i % 2 === 1 }));
    const running = runTls13Exchange(scripted.transport, parts, options());
    scripted.finish();
    await expectRefused(() => running, "tls_unsupported", /^the target closed the connection during the TLS handshake \(before its ServerHello\)$/);
    expect(scripted.written).toHaveLength(1);
  });

  test("an empty part beside others is no empty request", async () => {
    const { port } = await httpsTarget(ids.ecdsa);
    const request = [{ bytes: new Uint8Array(0), hidden: false }, ...requestWithHiddenCredential(TARGET_HOST, CREDENTIAL)];
    const exchange = await recordedExchange(port, request, options());
    expect(new TextDecoder().decode(exchange.recv)).toContain(sha256(CREDENTIAL));
  });

  test.each([
    ["a target named by IP address", "127.0.0.1", [{ bytes: new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n"), hidden: false }], "tls_unsupported", /^the TLS 1\.3 client needs a host name \(SNI and the certificate name\); the target is an IP address$/],
    ["an empty request", TARGET_HOST, [{ bytes: new Uint8Array(0), hidden: false }], "internal", /^the TLS 1\.3 client was given an empty request$/],
    ["no parts at all", TARGET_HOST, [], "internal", /^the TLS 1\.3 client was given an empty request$/],
    ["seventeen hidden parts", TARGET_HOST, Array.from({ length: 35 }, (_, i) => ({ bytes: new TextEncoder().encode(`p${i}`), hidden: i % 2 === 1 })), "invalid_redaction", /^the request has too many hidden parts: a connection carries at most 33 client epochs/],
  ] as const)("%s", async (_name, serverName, parts, code, message) => {
    const scripted = scriptedTransport();
    const { runTls13Exchange } = await import("../../../src/tls/client/exchange.ts");
    await expectRefused(() => runTls13Exchange(scripted.transport, parts, options({ serverName })), code, message);
    expect(scripted.written).toHaveLength(0);
  });
});

describe("the server's hellos and flight as the client reads them", () => {
  const messageOf = (messages: Uint8Array[], type: number) => messages.find((m) => m[0] === type)!;
  const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));
  const plain = (type: number, fragment: Uint8Array) => concat(Uint8Array.of(type, 3, 3, fragment.length >> 8, fragment.length & 0xff), fragment);

  test("a flight in one record per message, a message split over two, and acknowledged SNI and groups: the exchange goes on", async () => {
    const server = await rawTarget({
      encryptedExtensions: [[Extension.serverName, new Uint8Array(0)], [Extension.supportedGroups, Uint8Array.of(0, 2, 0, 0x1d)], [Extension.alpn, new Uint8Array([0, 9, 8, ...new TextEncoder().encode("http/1.1")])]],
      flightThenServe: true,
      flight: (messages, seal) => {
        const certificate = messageOf(messages, HandshakeType.certificate);
        const pieces = messages.flatMap((m) => (m === certificate ? [m.subarray(0, 100), m.subarray(100)] : [m]));
        return concat(...pieces.map((piece) => seal(22, piece)));
      },
    });
    const exchange = await recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    expect(new TextDecoder().decode(exchange.recv)).toEndWith("ok");
    // The notary reads the protocol chosen from the EncryptedExtensions.
    expect(verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), notaryExpectations()).alpn).toBe("http/1.1");
  });

  test.each([
    ["a Finished with more after it in its record", (m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => seal(22, concat(...m, m[0]!)), "tls_unsupported", /^the target broke the TLS protocol: the server's Finished does not end its record$/],
    ["an alert in the flight", (_m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => seal(21, Uint8Array.of(2, 42)), "tls_unsupported", /^the target refused the TLS 1\.3 handshake with alert 42 \(bad_certificate\)$/],
    ["data before the Finished", (_m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => seal(23, Uint8Array.of(1)), "tls_unsupported", /^the target broke the TLS protocol: the server sent data of type 23 before its Finished$/],
    ["a clear handshake record after the ServerHello", (m: Uint8Array[]) => plain(22, m[0]!), "tls_unsupported", /^the target broke the TLS protocol: the server sent a clear record of type 22 after its ServerHello$/],
    ["a ChangeCipherSpec after its first protected record", (m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => concat(seal(22, m[0]!), plain(20, Uint8Array.of(1))), "tls_unsupported", /^the target broke the TLS protocol: the server sent a clear record of type 20 after its ServerHello$/],
    ["a malformed ChangeCipherSpec before the flight", (m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => concat(plain(20, Uint8Array.of(2)), seal(22, concat(...m))), "tls_unsupported", /^the target broke the TLS protocol: the server sent a malformed ChangeCipherSpec$/],
    ["a flight that stops before its Finished", (m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => seal(22, m[0]!), "tls_unsupported", /^the target closed the connection during the TLS handshake \(before its Finished\)$/],
    ["a flight without CertificateVerify", (m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => seal(22, concat(...m.filter((x) => x[0] !== HandshakeType.certificateVerify))), "tls_unsupported", /^the target broke the TLS protocol: the server sent handshake message type 20 where its CertificateVerify was due$/],
    ["a flight without Certificate", (m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => seal(22, concat(m[0]!, m.at(-1)!)), "tls_unsupported", /^the server sent no certificate; proxy mode needs one$/],
    ["a flight larger than 256 KiB", (_m: Uint8Array[], seal: (t: number, c: Uint8Array) => Uint8Array) => {
      const huge = concat(Uint8Array.of(HandshakeType.encryptedExtensions, 0x06, 0, 0), new Uint8Array(17 * 16_000));
      return concat(...Array.from({ length: 17 }, (_, i) => seal(22, huge.subarray(i * 16_000, (i + 1) * 16_000))));
    }, "tls_unsupported", /^the target broke the TLS protocol: the server's handshake flight exceeds 262144 bytes$/],
  ] as const)("%s", async (_name, flight, code, message) => {
    const server = await rawTarget({ flight });
    await expectRefused(() => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), code, message);
    expect(server.requests).toHaveLength(0);
  });

  test("EncryptedExtensions repeating an extension", async () => {
    const server = await rawTarget({ encryptedExtensions: [[Extension.serverName, new Uint8Array(0)], [Extension.serverName, new Uint8Array(0)]] });
    await expectRefused(() => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), "tls_unsupported", /^the target broke the TLS protocol: the server's EncryptedExtensions repeats extension 0$/);
  });

  test("a ServerHello that does not end its record", async () => {
    const server = await rawTarget({ afterServerHello: Uint8Array.of(8, 0, 0, 2, 0, 0) });
    await expectRefused(() => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options()), "tls_unsupported", /^the target broke the TLS protocol: the server's ServerHello does not end its record$/);
  });

  test.each([
    ["closes at once", null, "tls_unsupported", /^the target closed the connection during the TLS handshake \(before its ServerHello\)$/],
    ["answers with application data", plain(23, Uint8Array.of(1)), "tls_unsupported", /^the target broke the TLS protocol: the server sent a record of type 23 where its ServerHello was due$/],
    ["answers with a ChangeCipherSpec", plain(20, Uint8Array.of(1)), "tls_unsupported", /^the target broke the TLS protocol: the server sent a record of type 20 where its ServerHello was due$/],
    ["answers with a Certificate", plain(22, Uint8Array.of(11, 0, 0, 0)), "tls_unsupported", /^the target broke the TLS protocol: the server sent handshake message type 11 where its ServerHello was due$/],
  ] as const)("a server that %s", async (_name, answer, code, message) => {
    const scripted = scriptedTransport();
    const { runTls13Exchange } = await import("../../../src/tls/client/exchange.ts");
    const running = runTls13Exchange(scripted.transport, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());
    if (answer) scripted.deliver(answer);
    scripted.finish();
    await expectRefused(() => running, code, message);
    // The ClientHello left, and the client ended its side.
    expect(scripted.written).toHaveLength(1);
    expect(scripted.ended).toBe(true);
  });
});

describe("around a HelloRetryRequest, and messages the client parses itself", () => {
  const ccs = (value: number) => Uint8Array.of(20, 3, 3, 0, 1, value);
  const run = (server: RawServer) => recordedExchange(server.port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options());

  test("one ChangeCipherSpec after the HelloRetryRequest is skipped", async () => {
    const exchange = await run(await rawTarget({ group: "p256", afterHelloRetry: ccs(1) }));
    expect(new TextDecoder().decode(exchange.recv)).toEndWith("ok");
  });

  test.each([
    ["a malformed ChangeCipherSpec", { afterHelloRetry: ccs(2) }, "tls_unsupported", /^the target broke the TLS protocol: the server sent a malformed ChangeCipherSpec$/],
    ["two ChangeCipherSpecs", { afterHelloRetry: concatBytes(ccs(1), ccs(1)) }, "tls_unsupported", /^the target broke the TLS protocol: the server sent a record of type 20 where its ServerHello was due$/],
    ["a Certificate where the ServerHello was due", { afterHelloRetry: Uint8Array.of(22, 3, 3, 0, 4, 11, 0, 0, 0), endAfterHelloRetry: true }, "tls_unsupported", /^the target broke the TLS protocol: the server sent handshake message type 11 where its ServerHello was due$/],
    ["the end of the connection", { endAfterHelloRetry: true }, "tls_unsupported", /^the target closed the connection during the TLS handshake \(before its ServerHello\)$/],
    ["more in the HelloRetryRequest's record", { helloRetryTrailer: Uint8Array.of(8, 0, 0, 2, 0, 0) }, "tls_unsupported", /^the target broke the TLS protocol: the server's HelloRetryRequest does not end its record$/],
  ] as const)("after the HelloRetryRequest, %s", async (_name, quirks, code, message) => {
    await expectRefused(async () => run(await rawTarget({ group: "p256", ...quirks })), code, message);
  });

  const alpn = (list: Uint8Array) => concatBytes(Uint8Array.of(0, Extension.alpn), vectorBytes(2, list));
  test.each([
    ["bytes after its extensions", concatBytes(vectorBytes(2), Uint8Array.of(0)), /^the target broke the TLS protocol: EncryptedExtensions has 1 unexpected trailing bytes$/],
    ["an extension cut short", vectorBytes(2, Uint8Array.of(0, 0, 0, 5, 1)), /^the target broke the TLS protocol: EncryptedExtensions extensions is truncated$/],
    ["an ALPN list cut short", vectorBytes(2, alpn(Uint8Array.of(0, 9, 8))), /^the target broke the TLS protocol: ALPN is truncated$/],
    ["an ALPN list of two names", vectorBytes(2, alpn(vectorBytes(2, vectorBytes(1, new TextEncoder().encode("http/1.1")), vectorBytes(1, new TextEncoder().encode("h2"))))), /^the target broke the TLS protocol: ALPN list has 3 unexpected trailing bytes$/],
    ["an extension the client did not ask for", vectorBytes(2, Uint8Array.of(0, 28, 0, 2, 0x40, 0)), /^the target's EncryptedExtensions carries extension 28, which the client did not ask for$/],
  ] as const)("EncryptedExtensions with %s", async (_name, body, message) => {
    await expectRefused(async () => run(await rawTarget({ encryptedExtensionsBody: body })), "tls_unsupported", message);
  });

  test("a CertificateRequest cut short", async () => {
    await expectRefused(async () => run(await rawTarget({ certificateRequest: true, certificateRequestBody: Uint8Array.of(5, 1) })), "tls_unsupported", /^the target broke the TLS protocol: CertificateRequest is truncated$/);
  });

  test("a flight of exactly 256 KiB of records is read; the limit is what it exceeds", async () => {
    const server = await rawTarget({
      flightThenServe: true,
      flight: (messages, seal) => {
        // 16 records of 16384 bytes each: the flight's bytes in pieces, each padded (inner type 22, then zeros).
        const flight = concatBytes(...messages);
        const piece = Math.ceil(flight.length / 16);
        const inner = 16384 - 16;
        return concatBytes(...Array.from({ length: 16 }, (_, i) => {
          const content = flight.subarray(i * piece, (i + 1) * piece);
          return seal(0, concatBytes(content, Uint8Array.of(22), new Uint8Array(inner - content.length - 2)));
        }));
      },
    });
    expect(new TextDecoder().decode((await run(server)).recv)).toEndWith("ok");
  });
});

test("the client checks the certificate at the time it is given", async () => {
  const { port } = await httpsTarget(ids.ecdsa);
  const later = new Date(Date.now() + 10 * 365 * 86_400_000);
  await expectRefused(() => recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL), options({ now: () => later })), "tls_untrusted", new RegExp(`^the server's certificate \\(CN=${TARGET_HOST.replaceAll(".", "\\.")}\\) is not valid at ${later.toISOString().slice(0, 10)}`));
});
