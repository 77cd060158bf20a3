import { describe, expect, test } from "bun:test";
import { concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import {
  Extension,
  clientKeyShares,
  parseCertificateVerify,
  parseCertificates,
  parseClientHello,
  parseEncryptedExtensions,
  parseServerHello,
  parseServerKeyExchange,
  selectedProtocol,
  serverKeyShare,
} from "../../src/tls/handshake.ts";
import { uint16Bytes, vectorBytes } from "../../src/tls/wire.ts";
import { clientHelloFor } from "../../testkit/client-hello.ts";
import { expectRefusal } from "./support/refusal.ts";

/** The handshake messages as the verifier and the client read them, from bytes written as RFC 8446 and 5246 lay them out. */

const ext = (type: number, body: Uint8Array) => concatBytes(uint16Bytes(type), vectorBytes(2, body));
const RANDOM = new Uint8Array(32).fill(0x11);
const HELLO_RETRY_RANDOM = hexToBytes("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c");
const text = (value: string) => new TextEncoder().encode(value);

function serverHelloBody(version: number, extensions: Uint8Array[] | null, random = RANDOM): Uint8Array {
  return concatBytes(uint16Bytes(version), random, vectorBytes(1, Uint8Array.of(5, 5)), uint16Bytes(0x1301), Uint8Array.of(0), extensions ? vectorBytes(2, ...extensions) : new Uint8Array(0));
}

describe("ClientHello", () => {
  test("a real one (node:tls): random, session id, suites, server name, extensions", async () => {
    const hello = await clientHelloFor("api.target.example");
    const parsed = parseClientHello(hello.subarray(9));
    expect(parsed.serverName).toBe("api.target.example");
    expect(parsed.random).toEqual(hello.subarray(11, 43));
    expect(parsed.cipherSuites).toContain(0x1301);
    expect(parsed.extensions.has(Extension.supportedVersions)).toBe(true);
    expect(parseClientHello((await clientHelloFor()).subarray(9)).serverName).toBeNull();
  });

  function clientHello(extensions: Uint8Array[] | null): Uint8Array {
    return concatBytes(uint16Bytes(0x0303), RANDOM, vectorBytes(1), vectorBytes(2, uint16Bytes(0x1301), uint16Bytes(0xc02b)), vectorBytes(1, Uint8Array.of(0)), extensions ? vectorBytes(2, ...extensions) : new Uint8Array(0));
  }
  const serverNames = (...entries: [number, string][]) => ext(Extension.serverName, vectorBytes(2, ...entries.map(([type, name]) => concatBytes(Uint8Array.of(type), vectorBytes(2, text(name))))));

  test("the host_name entry of server_name, past entries of other types; no extensions at all", () => {
    const parsed = parseClientHello(clientHello([serverNames([1, "not a host name"], [0, "host.example"])]));
    expect(parsed.serverName).toBe("host.example");
    expect(parsed.cipherSuites).toEqual([0x1301, 0xc02b]);
    expect(parsed.sessionId).toEqual(new Uint8Array(0));
    expect(parseClientHello(clientHello([serverNames([1, "other"])])).serverName).toBeNull();
    const bare = parseClientHello(clientHello(null));
    expect(bare.extensions.size).toBe(0);
    expect(bare.serverName).toBeNull();
  });

  test("an extension repeated, or bytes after the extensions", () => {
    expectRefusal(() => parseClientHello(clientHello([ext(13, Uint8Array.of(0)), ext(13, Uint8Array.of(0))])), "transcript_invalid", /^ClientHello repeats extension 13$/);
    expectRefusal(() => parseClientHello(concatBytes(clientHello([]), Uint8Array.of(0))), "transcript_invalid", /^ClientHello has 1 unexpected trailing bytes$/);
  });

  test("key_share entries, and the server's one entry (the group alone in a HelloRetryRequest)", () => {
    const list = vectorBytes(2, uint16Bytes(0x1d), vectorBytes(2, Uint8Array.of(1, 2)), uint16Bytes(0x17), vectorBytes(2, Uint8Array.of(3)));
    expect(clientKeyShares(list)).toEqual([
      { group: 0x1d, keyExchange: Uint8Array.of(1, 2) },
      { group: 0x17, keyExchange: Uint8Array.of(3) },
    ]);
    expect(serverKeyShare(concatBytes(uint16Bytes(0x17), vectorBytes(2, Uint8Array.of(4))), false)).toEqual({ group: 0x17, keyExchange: Uint8Array.of(4) });
    expect(serverKeyShare(uint16Bytes(0x17), true)).toEqual({ group: 0x17, keyExchange: new Uint8Array(0) });
    expectRefusal(() => serverKeyShare(concatBytes(uint16Bytes(0x17), Uint8Array.of(9)), true), "transcript_invalid", /^key_share has 1 unexpected trailing bytes$/);
  });
});

describe("ServerHello", () => {
  test("TLS 1.3 by supported_versions, TLS 1.2 by its legacy version alone", () => {
    const tls13 = parseServerHello(serverHelloBody(0x0303, [ext(Extension.supportedVersions, uint16Bytes(0x0304))]));
    expect({ version: tls13.version, helloRetry: tls13.helloRetry, cipherSuite: tls13.cipherSuite, compression: tls13.compression }).toEqual({ version: "TLS1.3", helloRetry: false, cipherSuite: 0x1301, compression: 0 });
    expect(tls13.random).toEqual(RANDOM);
    expect(tls13.sessionId).toEqual(Uint8Array.of(5, 5));
    expect(parseServerHello(serverHelloBody(0x0303, null)).version).toBe("TLS1.2");
    expect(parseServerHello(serverHelloBody(0x0303, [])).version).toBe("TLS1.2");
  });

  test("another version is refused, in either field", () => {
    expectRefusal(() => parseServerHello(serverHelloBody(0x0302, null)), "tls_unsupported", /^proxy mode accepts TLS 1\.2 and 1\.3 only; the server chose version 0x0302$/);
    expectRefusal(() => parseServerHello(serverHelloBody(0x0303, [ext(Extension.supportedVersions, uint16Bytes(0x0305))])), "tls_unsupported", /chose version 0x0305$/);
  });

  test("a HelloRetryRequest is known by its random, and is TLS 1.3 only", () => {
    const retry = parseServerHello(serverHelloBody(0x0303, [ext(Extension.supportedVersions, uint16Bytes(0x0304))], HELLO_RETRY_RANDOM));
    expect(retry.helloRetry).toBe(true);
    expectRefusal(() => parseServerHello(serverHelloBody(0x0303, null, HELLO_RETRY_RANDOM)), "transcript_invalid", /^the server sent a HelloRetryRequest for another version than TLS 1\.3$/);
  });
});

describe("EncryptedExtensions and ALPN", () => {
  const alpn = (...names: string[]) => ext(Extension.alpn, vectorBytes(2, ...names.map((name) => vectorBytes(1, text(name)))));

  test("the one protocol chosen, or none", () => {
    expect(selectedProtocol(parseEncryptedExtensions(vectorBytes(2, alpn("http/1.1"))))).toBe("http/1.1");
    expect(selectedProtocol(parseEncryptedExtensions(vectorBytes(2)))).toBeNull();
    expectRefusal(() => parseEncryptedExtensions(concatBytes(vectorBytes(2), Uint8Array.of(1))), "transcript_invalid", /^EncryptedExtensions has 1 unexpected trailing bytes$/);
  });

  test("a list of two names, or bytes after the list, is malformed", () => {
    expectRefusal(() => selectedProtocol(parseEncryptedExtensions(vectorBytes(2, alpn("h2", "http/1.1")))), "transcript_invalid", /^ALPN protocol list has 9 unexpected trailing bytes$/);
    const trailing = ext(Extension.alpn, concatBytes(vectorBytes(2, vectorBytes(1, text("h2"))), Uint8Array.of(0)));
    expectRefusal(() => selectedProtocol(new Map([[Extension.alpn, trailing.subarray(4)]])), "transcript_invalid", /^application_layer_protocol_negotiation has 1 unexpected trailing bytes$/);
  });
});

describe("Certificate, ServerKeyExchange, CertificateVerify", () => {
  const der = [Uint8Array.of(0x30, 1, 1), Uint8Array.of(0x30, 1, 2)];

  test("TLS 1.3 entries carry a request context and extensions; TLS 1.2 entries the certificate alone", () => {
    const tls13 = concatBytes(vectorBytes(1, Uint8Array.of(9)), vectorBytes(3, ...der.map((d) => concatBytes(vectorBytes(3, d), vectorBytes(2, Uint8Array.of(0, 5, 0, 0))))));
    expect(parseCertificates(tls13, "TLS1.3")).toEqual(der);
    const tls12 = vectorBytes(3, ...der.map((d) => vectorBytes(3, d)));
    expect(parseCertificates(tls12, "TLS1.2")).toEqual(der);
    expectRefusal(() => parseCertificates(concatBytes(tls12, Uint8Array.of(0)), "TLS1.2"), "transcript_invalid", /^Certificate has 1 unexpected trailing bytes$/);
  });

  test("an empty list: no certificate", () => {
    expectRefusal(() => parseCertificates(concatBytes(vectorBytes(1), vectorBytes(3)), "TLS1.3"), "tls_unsupported", /^the server sent no certificate; proxy mode needs one$/);
  });

  test("ECDHE parameters on a named curve: what the signature covers, the scheme, the signature", () => {
    const point = new Uint8Array(65).fill(4);
    const params = concatBytes(Uint8Array.of(3), uint16Bytes(0x17), vectorBytes(1, point));
    const signature = Uint8Array.of(0x30, 2, 1, 1);
    expect(parseServerKeyExchange(concatBytes(params, uint16Bytes(0x0403), vectorBytes(2, signature)))).toEqual({ params, scheme: 0x0403, signature });
    expectRefusal(() => parseServerKeyExchange(concatBytes(Uint8Array.of(1), params.subarray(1), uint16Bytes(0x0403), vectorBytes(2, signature))), "tls_unsupported", /^the server's ECDHE parameters do not name a curve$/);
    expectRefusal(() => parseServerKeyExchange(concatBytes(params, uint16Bytes(0x0403), vectorBytes(2, signature), Uint8Array.of(0))), "transcript_invalid", /^ServerKeyExchange has 1 unexpected trailing bytes$/);
  });

  test("CertificateVerify: scheme and signature, nothing after", () => {
    expect(parseCertificateVerify(concatBytes(uint16Bytes(0x0804), vectorBytes(2, Uint8Array.of(1, 2, 3))))).toEqual({ scheme: 0x0804, signature: Uint8Array.of(1, 2, 3) });
    expectRefusal(() => parseCertificateVerify(concatBytes(uint16Bytes(0x0804), vectorBytes(2, Uint8Array.of(1)), Uint8Array.of(0))), "transcript_invalid", /^CertificateVerify has 1 unexpected trailing bytes$/);
  });
});

describe("each structure named when it is cut short or repeats an extension", () => {
  const clientHello = (suites: Uint8Array, extensions: Uint8Array) => concatBytes(uint16Bytes(0x0303), RANDOM, vectorBytes(1), vectorBytes(2, suites), vectorBytes(1, Uint8Array.of(0)), extensions);

  test.each([
    ["ClientHello extensions", () => parseClientHello(clientHello(uint16Bytes(0x1301), Uint8Array.of(0, 4, 0, 0, 0, 9))), /^ClientHello extensions is truncated$/],
    ["ClientHello cipher suites", () => parseClientHello(clientHello(Uint8Array.of(0x13), vectorBytes(2))), /^ClientHello cipher suites is truncated$/],
    ["server_name", () => parseClientHello(clientHello(uint16Bytes(0x1301), vectorBytes(2, ext(Extension.serverName, Uint8Array.of(0))))), /^server_name is truncated$/],
    ["server_name list", () => parseClientHello(clientHello(uint16Bytes(0x1301), vectorBytes(2, ext(Extension.serverName, vectorBytes(2, Uint8Array.of(0, 0, 9)))))), /^server_name list is truncated$/],
    ["key_share", () => clientKeyShares(Uint8Array.of(0)), /^key_share is truncated$/],
    ["key_share list", () => clientKeyShares(vectorBytes(2, Uint8Array.of(0, 0x1d, 0, 9))), /^key_share list is truncated$/],
    ["ServerHello", () => parseServerHello(Uint8Array.of(3)), /^ServerHello is truncated$/],
    ["ServerHello's extensions", () => parseServerHello(serverHelloBody(0x0303, [ext(Extension.supportedVersions, uint16Bytes(0x0304)), ext(Extension.supportedVersions, uint16Bytes(0x0304))])), /^ServerHello repeats extension 43$/],
    ["supported_versions", () => parseServerHello(serverHelloBody(0x0303, [ext(Extension.supportedVersions, Uint8Array.of(3))])), /^supported_versions is truncated$/],
    ["EncryptedExtensions' extensions", () => parseEncryptedExtensions(vectorBytes(2, ext(0, new Uint8Array(0)), ext(0, new Uint8Array(0)))), /^EncryptedExtensions repeats extension 0$/],
    ["certificate list", () => parseCertificates(vectorBytes(3, Uint8Array.of(0, 0, 9, 1)), "TLS1.2"), /^certificate list is truncated$/],
  ] as const)("%s", (_name, parse, message) => {
    expectRefusal(parse, "transcript_invalid", message);
  });
});
