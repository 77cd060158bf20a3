import { beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { Extension } from "../../src/tls/handshake.ts";
import { digest } from "../../src/tls/key-schedule.ts";
import { HandshakeType, handshakeMessage } from "../../src/tls/records.ts";
import { messageHash, readHellos } from "../../src/tls/session-start.ts";
import { uint16Bytes, vectorBytes } from "../../src/tls/wire.ts";
import { verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { clientHelloFor } from "../../testkit/client-hello.ts";
import { expectRefusal } from "./support/refusal.ts";

/** The clear start of a session: a real ClientHello (node:tls) and ServerHellos written as a server writes them. */

let clientHello: Uint8Array;
beforeAll(async () => {
  clientHello = await clientHelloFor("api.target.example");
});

const ext = (type: number, body: Uint8Array) => concatBytes(uint16Bytes(type), vectorBytes(2, body));
const record = (type: number, fragment: Uint8Array) => concatBytes(Uint8Array.of(type, 3, 3), uint16Bytes(fragment.length), fragment);
const KEY_SHARE = ext(Extension.keyShare, concatBytes(uint16Bytes(0x1d), vectorBytes(2, new Uint8Array(32).fill(9))));
const TLS13 = ext(Extension.supportedVersions, uint16Bytes(0x0304));

function serverHello(extensions: Uint8Array[], suite = 0x1301): Uint8Array {
  const body = concatBytes(uint16Bytes(0x0303), new Uint8Array(randomBytes(32)), vectorBytes(1, clientHello.subarray(44, 44 + clientHello[43]!)), uint16Bytes(suite), Uint8Array.of(0), vectorBytes(2, ...extensions));
  return handshakeMessage(HandshakeType.serverHello, body);
}

test("a TLS 1.3 start: the suite, the hellos, the transcript through the ServerHello; each side positioned after its hello", () => {
  const hello = serverHello([TLS13, KEY_SHARE]);
  const after = record(23, new Uint8Array(20));
  const start = readHellos({ clientToServer: concatBytes(clientHello, record(20, Uint8Array.of(1))), serverToClient: concatBytes(record(22, hello), after) });
  expect(start.suite.name).toBe("TLS_AES_128_GCM_SHA256");
  expect(start.transcript).toEqual([clientHello.subarray(5), hello]);
  expect(start.clientHello.serverName).toBe("api.target.example");
  expect(start.serverHello.version).toBe("TLS1.3");
  expect(start.server.peek()?.type).toBe(23);
  expect(start.client.peek()?.type).toBe(20);
  expect(start.serverAssembler.empty).toBe(true);
});

test("a TLS 1.3 ServerHello without a key share, or with a pre-shared key", () => {
  const relayed = (hello: Uint8Array) => ({ clientToServer: clientHello, serverToClient: record(22, hello) });
  expectRefusal(() => readHellos(relayed(serverHello([TLS13]))), "tls_unsupported", /^the server's TLS 1\.3 ServerHello has no key share; proxy mode needs an ephemeral key exchange$/);
  expectRefusal(() => readHellos(relayed(serverHello([TLS13, KEY_SHARE, ext(Extension.preSharedKey, uint16Bytes(0))]))), "tls_unsupported", /^the server resumed a TLS 1\.3 session with a pre-shared key; proxy mode needs a full handshake$/);
  // TLS 1.2 has neither: its key exchange comes later.
  expect(readHellos(relayed(serverHello([], 0xc02b))).suite.name).toBe("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256");
});

test("a first message of another type on either side", () => {
  const certificate = record(22, handshakeMessage(HandshakeType.certificate, new Uint8Array(3)));
  expectRefusal(() => readHellos({ clientToServer: clientHello, serverToClient: certificate }), "transcript_invalid", /^the server sent handshake message type 11 where its ServerHello was due$/);
  expectRefusal(() => readHellos({ clientToServer: certificate, serverToClient: record(22, serverHello([TLS13, KEY_SHARE])) }), "transcript_invalid", /^the client sent handshake message type 11 where its ClientHello was due$/);
});

test("the first ClientHello stands in the transcript after a retry as its hash", () => {
  expect(messageHash("sha256", clientHello)).toEqual(concatBytes(Uint8Array.of(254, 0, 0, 32), digest("sha256", clientHello)));
  expect(messageHash("sha384", clientHello).length).toBe(4 + 48);
});

test("after a HelloRetryRequest: bytes that end before the second ClientHello, or before the ServerHello", () => {
  const retryRandom = Uint8Array.from(Buffer.from("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c", "hex"));
  const body = concatBytes(uint16Bytes(0x0303), retryRandom, vectorBytes(1, clientHello.subarray(44, 44 + clientHello[43]!)), uint16Bytes(0x1301), Uint8Array.of(0), vectorBytes(2, TLS13, ext(Extension.keyShare, uint16Bytes(0x17))));
  const retry = record(22, handshakeMessage(HandshakeType.serverHello, body));
  expectRefusal(() => readHellos({ clientToServer: clientHello, serverToClient: retry }), "transcript_invalid", /^the client's bytes end before its second ClientHello$/);
  expectRefusal(() => readHellos({ clientToServer: concatBytes(clientHello, clientHello), serverToClient: retry }), "transcript_invalid", /^the server's bytes end before its ServerHello$/);
});

test("bytes that are not TLS records, named by direction", () => {
  const junk = new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n");
  expectRefusal(() => readHellos({ clientToServer: junk, serverToClient: new Uint8Array(0) }), "transcript_invalid", /^the client bytes are not TLS records \(bad record header at byte 0\)$/);
  expectRefusal(() => readHellos({ clientToServer: clientHello, serverToClient: junk }), "transcript_invalid", /^the server bytes are not TLS records \(bad record header at byte 0\)$/);
});

test("the notary's check of the ClientHello's server name: none, another, or one with a trailing dot is refused before anything else", async () => {
  const expectations = (serverName: string) => ({ serverName, trustAnchorsPem: [], now: new Date() });
  const serverToClient = record(22, serverHello([TLS13, KEY_SHARE]));
  const keys = { version: "TLS1.3" as const, serverHandshakeTrafficSecret: "00".repeat(32), serverApplicationTrafficSecret: "00".repeat(32) };
  const nameless = await clientHelloFor();
  expectRefusal(() => verifyRelayedSession({ clientToServer: nameless, serverToClient }, keys, expectations("api.target.example")), "tls_untrusted", /^the ClientHello names no server, not api\.target\.example$/);
  expectRefusal(() => verifyRelayedSession({ clientToServer: clientHello, serverToClient }, keys, expectations("other.example")), "tls_untrusted", /^the ClientHello names server "api\.target\.example", not other\.example$/);
  // SNI never carries a trailing dot (RFC 6066), even when the name expected has one.
  const dotted = await clientHelloFor("api.target.example.");
  for (const name of ["api.target.example", "api.target.example."]) {
    expectRefusal(() => verifyRelayedSession({ clientToServer: dotted, serverToClient }, keys, expectations(name)), "tls_untrusted", /^the ClientHello's SNI ends in a dot \(RFC 6066 sends none\); expected api\.target\.example\.?$/);
  }
  // Case-blind: the name passes, and the check goes on (here to the server's flight, which these bytes lack).
  expect(() => verifyRelayedSession({ clientToServer: clientHello, serverToClient }, keys, expectations("API.Target.Example"))).toThrow(/^(?!the ClientHello)/);
  const upper = await clientHelloFor("API.Target.Example");
  expect(() => verifyRelayedSession({ clientToServer: upper, serverToClient }, keys, expectations("api.target.example"))).toThrow(/^(?!the ClientHello)/);
});
