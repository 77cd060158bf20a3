import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { keysToReveal, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type Target, relayedExchange, startHttpsTarget, startOpensslTls13Target } from "./support/exchange.ts";
import { verifyIdentities } from "./support/identities.ts";

/** A 1 MB answer spans about 64 records: every one opens in order; the verifier's time is printed, not asserted. */

const ids = verifyIdentities();
const MEGABYTE = 1024 * 1024;
const body = new Uint8Array(MEGABYTE).map((_, i) => 0x41 + (i % 26));
const FILE = "large-answer.txt";
writeFileSync(join(ids.fixture.dir, FILE), body);

const targets: Target[] = [];
afterAll(async () => {
  await Promise.all(targets.map((t) => t.stop()));
});

const cases = [
  { name: "TLS 1.3 AES-128-GCM", start: () => startHttpsTarget(ids.ecdsa, { version: "TLSv1.3" }, body), path: "/" },
  { name: "TLS 1.3 ChaCha20-Poly1305", start: () => startOpensslTls13Target(ids.ecdsa, ids.fixture.dir, "TLS_CHACHA20_POLY1305_SHA256", true), path: `/${FILE}` },
  { name: "TLS 1.2 AES-256-GCM", start: () => startHttpsTarget(ids.rsa, { version: "TLSv1.2", ciphers: "ECDHE-RSA-AES256-GCM-SHA384" }, body), path: "/" },
  { name: "TLS 1.2 ChaCha20-Poly1305", start: () => startHttpsTarget(ids.ecdsa, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-CHACHA20-POLY1305" }, body), path: "/" },
];

describe.each(cases)("$name", ({ name, start, path }) => {
  test("a 1 MB answer decrypts whole", async () => {
    const target = await start();
    targets.push(target);
    const exchange = await relayedExchange(target.port, { ca: ids.fixture.caPem }, path);
    const keys = keysToReveal(exchange.keylog, exchange.relayed, false);
    const began = performance.now();
    const session = verifyRelayedSession(exchange.relayed, keys, { serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });
    const ms = performance.now() - began;
    console.log(`verifyRelayedSession, ${name}, ${session.recv.length} bytes: ${ms.toFixed(1)} ms`);
    expect(session.recv).toEqual(exchange.answer);
    expect(session.recv.length).toBeGreaterThan(MEGABYTE);
    const text = new TextDecoder().decode(session.recv);
    expect(text.endsWith(new TextDecoder().decode(body))).toBe(true);
  });
});
