import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as v from "valibot";
import { keysToReveal, revealedKeysSchema, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { TARGET_HOST, type ServerIdentity } from "../../testkit/tls-fixture.ts";
import { type Target, relayedExchange, startHttpsTarget, startOpensslTls13Target } from "./support/exchange.ts";
import { type VerifyIdentities, verifyIdentities } from "./support/identities.ts";

/**
 * Proxy mode's verifier on real sessions: a node:tls client talks HTTPS to a local server through a recording TCP
 * relay; the keys it would reveal open every server record the relay saw, and the answer comes out byte for byte.
 */

/** What a TLS 1.3 client's closing alert adds to the length counted from record sizes (2 bytes of alert). */
const CLOSE_NOTIFY_LENGTH = 2;

const ids: VerifyIdentities = verifyIdentities();
const identity = (key: "ecdsa" | "rsa"): ServerIdentity => ids[key];

interface Case {
  version: "TLSv1.2" | "TLSv1.3";
  key: "ecdsa" | "rsa";
  /** The server's one suite (OpenSSL name for TLS 1.2, IANA for TLS 1.3 via openssl s_server); none: Bun's default. */
  suite?: string;
  expectedSuite: string;
}

const cases: Case[] = [
  ...(["ecdsa", "rsa"] as const).flatMap((key): Case[] => [
    { version: "TLSv1.3", key, expectedSuite: "TLS_AES_128_GCM_SHA256" },
    { version: "TLSv1.3", key, suite: "TLS_AES_256_GCM_SHA384", expectedSuite: "TLS_AES_256_GCM_SHA384" },
    { version: "TLSv1.3", key, suite: "TLS_CHACHA20_POLY1305_SHA256", expectedSuite: "TLS_CHACHA20_POLY1305_SHA256" },
  ]),
  ...(["ecdsa", "rsa"] as const).flatMap((key): Case[] => {
    const kx = key.toUpperCase();
    const iana = `TLS_ECDHE_${kx}_WITH`;
    return [
      { version: "TLSv1.2", key, suite: `ECDHE-${kx}-AES128-GCM-SHA256`, expectedSuite: `${iana}_AES_128_GCM_SHA256` },
      { version: "TLSv1.2", key, suite: `ECDHE-${kx}-AES256-GCM-SHA384`, expectedSuite: `${iana}_AES_256_GCM_SHA384` },
      { version: "TLSv1.2", key, suite: `ECDHE-${kx}-CHACHA20-POLY1305`, expectedSuite: `${iana}_CHACHA20_POLY1305_SHA256` },
    ];
  }),
];

const BODY = "the answer: 42\n";
const targets: Target[] = [];

async function targetFor(c: Case): Promise<Target> {
  const target =
    c.version === "TLSv1.3" && c.suite
      ? await startOpensslTls13Target(identity(c.key), ids.fixture.dir, c.suite)
      : await startHttpsTarget(identity(c.key), { version: c.version, ciphers: c.suite }, BODY);
  targets.push(target);
  return target;
}

afterAll(async () => {
  await Promise.all(targets.map((t) => t.stop()));
});

const expectations = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe.each(cases)("$version $key $expectedSuite", (c) => {
  let target: Target;
  beforeAll(async () => {
    target = await targetFor(c);
  });

  test("the server's keys alone give the answer, and the request stays hidden", async () => {
    const exchange = await relayedExchange(target.port, { ca: ids.fixture.caPem });
    expect(exchange.cipher).toBe(c.expectedSuite);
    const keys = keysToReveal(exchange.keylog, exchange.relayed, false);
    expect(Object.keys(keys).some((name) => name.startsWith("client"))).toBe(false);
    expect(v.parse(revealedKeysSchema, keys)).toEqual(keys);
    const session = verifyRelayedSession(exchange.relayed, keys, expectations());
    expect(session.tlsVersion).toBe(c.version === "TLSv1.3" ? "TLS1.3" : "TLS1.2");
    expect(session.cipherSuite).toBe(c.expectedSuite);
    expect(session.serverName).toBe(TARGET_HOST);
    expect(exchange.answer.length).toBeGreaterThan(0);
    expect(text(session.recv)).toStartWith("HTTP/1");
    expect(session.recv).toEqual(exchange.answer);
    expect(session.sent).toBeNull();
    const requestLength = exchange.request.length;
    expect(session.sentLength).toBe(c.version === "TLSv1.3" ? requestLength + CLOSE_NOTIFY_LENGTH : requestLength);
    expect(text(session.recv)).not.toContain(text(exchange.request).split("\r\n")[0] ?? "GET");
  });

  test("with the client's keys too, the request comes out as sent", async () => {
    const exchange = await relayedExchange(target.port, { ca: ids.fixture.caPem });
    const keys = keysToReveal(exchange.keylog, exchange.relayed, true);
    expect(v.parse(revealedKeysSchema, keys)).toEqual(keys);
    const session = verifyRelayedSession(exchange.relayed, keys, expectations());
    expect(session.recv).toEqual(exchange.answer);
    expect(session.sent).toEqual(exchange.request);
    expect(session.sentLength).toBe(exchange.request.length);
  });
});
