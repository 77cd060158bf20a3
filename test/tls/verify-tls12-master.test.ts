import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { checkCertificateChain, parseTrustAnchors } from "../../src/tls/certificates.ts";
import { readHellos } from "../../src/tls/session-start.ts";
import { verifyTls12 } from "../../src/tls/verify-tls12.ts";
import { verifyTls12MasterSecret } from "../../src/tls/verify-tls12-master.ts";
import { type RelayedBytes, type SessionExpectations, keysToReveal, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { keyBlock12 } from "../../src/tls/key-schedule.ts";
import { hexToBytes } from "@noble/hashes/utils.js";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type RecordedExchange, type Target, relayedExchange, startHttpsTarget } from "./support/exchange.ts";
import { verifyIdentities } from "./support/identities.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * TLS 1.2 with the master secret revealed: the verifier derives every key and checks both Finished messages, on
 * real sessions (node:tls client, Bun's HTTPS server, through a recording relay).
 */

const ids = verifyIdentities();
const targets: Target[] = [];
afterAll(async () => {
  await Promise.all(targets.map((t) => t.stop()));
});
const expectations = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });

/** The master secret of a TLS 1.2 session, as the prover reveals it with the request. */
function tls12MasterSecret(exchange: RecordedExchange): string {
  const keys = keysToReveal(exchange.keylog, exchange.relayed, true);
  if (keys.version !== "TLS1.2" || !keys.masterSecret) throw new Error("not a TLS 1.2 master secret");
  return keys.masterSecret;
}

const verifyRelayedTls12Session = (relayed: RelayedBytes, masterSecret: string, expect: SessionExpectations) =>
  verifyRelayedSession(relayed, { version: "TLS1.2", masterSecret }, expect);

async function session(ciphers: string): Promise<RecordedExchange> {
  const target = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.2", ciphers }, "the answer\n");
  targets.push(target);
  return relayedExchange(target.port, { ca: ids.fixture.caPem });
}

/** The relayed bytes with the client's byte at `offset` changed. */
function flipClientByte(relayed: RelayedBytes, offset: number): RelayedBytes {
  const clientToServer = relayed.clientToServer.slice();
  clientToServer[offset] = (clientToServer[offset] ?? 0) ^ 1;
  return { ...relayed, clientToServer };
}

describe.each(["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"])("%s", (ciphers) => {
  test("the master secret gives both directions, and both Finished messages match it", async () => {
    const exchange = await session(ciphers);
    const master = tls12MasterSecret(exchange);
    const verified = verifyRelayedTls12Session(exchange.relayed, master, expectations());
    expect(verified.sent).toEqual(exchange.request);
    expect(new TextDecoder().decode(verified.recv)).toEndWith("the answer\n");
  });
});

describe("a session with a NewSessionTicket", () => {
  let exchange: RecordedExchange;
  let master = "";
  beforeAll(async () => {
    exchange = await session("ECDHE-ECDSA-AES128-GCM-SHA256");
    master = tls12MasterSecret(exchange);
  });

  test("verifies: the server's Finished covers the ticket", () => {
    const start = readHellos(exchange.relayed);
    const keys = keyBlock12(start.suite, hexToBytes(master), start.clientHello.random, start.serverHello.random);
    const chain = (der: Uint8Array[]) => checkCertificateChain(der, TARGET_HOST, parseTrustAnchors([ids.fixture.caPem]), new Date());
    expect(verifyTls12(start, keys, chain).handshake.tickets.length).toBeGreaterThan(0);
    expect(verifyRelayedTls12Session(exchange.relayed, master, expectations()).sent).toEqual(exchange.request);
  });

  test("a master secret with one byte changed: its keys open nothing", () => {
    const wrong = (master[0] === "0" ? "1" : "0") + master.slice(1);
    expectRefusal(() => verifyRelayedTls12Session(exchange.relayed, wrong, expectations()), "transcript_invalid", /server's protected record 0 does not authenticate under the revealed server write key/);
  });

  test("the master secret of another session", async () => {
    const other = await session("ECDHE-ECDSA-AES128-GCM-SHA256");
    expectRefusal(() => verifyRelayedTls12Session(exchange.relayed, tls12MasterSecret(other), expectations()), "transcript_invalid", /does not authenticate/);
  });

  test("the handshake changed in clear (the client's key exchange): the keys still open the records, the Finished does not match", () => {
    // The client's second record is its ClientKeyExchange in clear: change the last byte of its point.
    const clientHelloRecord = 5 + (((exchange.relayed.clientToServer[3] ?? 0) << 8) | (exchange.relayed.clientToServer[4] ?? 0));
    const keyExchangeEnd = clientHelloRecord + 5 + (((exchange.relayed.clientToServer[clientHelloRecord + 3] ?? 0) << 8) | (exchange.relayed.clientToServer[clientHelloRecord + 4] ?? 0));
    expectRefusal(
      () => verifyRelayedTls12Session(flipClientByte(exchange.relayed, keyExchangeEnd - 1), master, expectations()),
      "transcript_invalid",
      /the client's Finished does not match the revealed master secret and the handshake/,
    );
  });

  test("the server's NewSessionTicket changed in clear: the client's Finished still matches, the server's does not", () => {
    const start = readHellos(exchange.relayed);
    // The server's clear records in order: hello flight, then the ticket's record before its ChangeCipherSpec.
    const records = start.server;
    let offset = 0;
    let ticketEnd = -1;
    for (let record = records.take(); record; record = records.take()) {
      offset += 5 + record.fragment.length;
      if (record.type === 22 && record.fragment[0] === 4) ticketEnd = offset;
    }
    expect(ticketEnd).toBeGreaterThan(0);
    const serverToClient = exchange.relayed.serverToClient.slice();
    serverToClient[ticketEnd - 10] = (serverToClient[ticketEnd - 10] ?? 0) ^ 1;
    expectRefusal(
      () => verifyRelayedTls12Session({ ...exchange.relayed, serverToClient }, master, expectations()),
      "transcript_invalid",
      /the server's Finished does not match the revealed master secret and the handshake/,
    );
  });

  test("a master secret for a TLS 1.3 session, or of the wrong length", async () => {
    const target = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.3" }, "x");
    targets.push(target);
    const tls13 = await relayedExchange(target.port, { ca: ids.fixture.caPem });
    expectRefusal(() => verifyRelayedTls12Session(tls13.relayed, master, expectations()), "transcript_invalid", /the revealed keys are for TLS1\.2, but the session is TLS1\.3/);
    expectRefusal(() => verifyRelayedTls12Session(exchange.relayed, master.slice(2), expectations()), "transcript_invalid", /master secret has 47 bytes; the cipher suite needs 48/);
  });
});

test("the master secret's length, checked by the Finished check itself too", async () => {
  const exchange = await session("ECDHE-ECDSA-AES128-GCM-SHA256");
  const chain = (der: Uint8Array[]) => checkCertificateChain(der, TARGET_HOST, parseTrustAnchors([ids.fixture.caPem]), new Date());
  const master = hexToBytes(tls12MasterSecret(exchange));
  expect(verifyTls12MasterSecret(readHellos(exchange.relayed), master, chain).sent).toEqual(exchange.request);
  expectRefusal(() => verifyTls12MasterSecret(readHellos(exchange.relayed), master.subarray(1), chain), "transcript_invalid", /^the revealed master secret has 47 bytes; TLS 1\.2 has 48$/);
});
