/**
 * The TLS 1.3 client against real servers in their own processes (OpenSSL's s_server, Node's and Bun's node:https,
 * Python's ssl, nginx), on loopback and free ports: each proof is a GET with a hidden Authorization, the server's
 * answer read, and the notary's whole check on the bytes the connection carried (the epochs, then the request rule).
 */
import { expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { messageComplete } from "../../../src/http1/message.ts";
import { DEFAULT_MAX_HIDDEN_REQUEST_SPAN, partlyRevealedDirection, revealedRequestProblem } from "../../../src/proof/request-rule.ts";
import type { Tls13ClientOptions } from "../../../src/tls/client/exchange.ts";
import { HandshakeType } from "../../../src/tls/records.ts";
import { readHellos } from "../../../src/tls/session-start.ts";
import { type VerifiedSession, keysOfEpochExchange, verifyRelayedSession } from "../../../src/tls/verify-session.ts";
import { scratchDir } from "../../../testkit/env.ts";
import { type ServerIdentity, TARGET_HOST, type TlsFixture, rsaPssIdentity } from "../../../testkit/tls-fixture.ts";
import { waitUntil } from "../../../testkit/wait.ts";
import { verifyIdentities } from "../support/identities.ts";
import { type RecordedExchange, recordedExchange, requestWithHiddenCredential } from "./support.ts";

export const CREDENTIAL = "Bearer tlsproof-interop-0123456789abcdef";
export const BIG_BODY = 200_000;

export interface IdentityFiles extends ServerIdentity {
  keyPath: string;
  chainPath: string;
}

export interface InteropIdentities {
  fixture: TlsFixture;
  ecdsa: IdentityFiles;
  rsa: IdentityFiles;
  rsaPss: IdentityFiles;
}

/** The test CA's ECDSA, RSA and RSASSA-PSS leaves for TARGET_HOST, written where a server process reads them. */
export function interopIdentities(): InteropIdentities {
  const ids = verifyIdentities();
  const dir = scratchDir("tls13-interop");
  const files = (name: string, identity: ServerIdentity): IdentityFiles => {
    const keyPath = join(dir, `${name}.key`);
    const chainPath = join(dir, `${name}-chain.pem`);
    writeFileSync(keyPath, identity.leafKeyPem);
    writeFileSync(chainPath, identity.chainPem);
    return { ...identity, keyPath, chainPath };
  };
  return { fixture: ids.fixture, ecdsa: files("ecdsa", ids.ecdsa), rsa: files("rsa", ids.rsa), rsaPss: files("rsa-pss", rsaPssIdentity(ids.fixture)) };
}

/** A port free now (nginx takes its port in its configuration). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === "object" && address ? address.port : 0;
}

/** Resolves once something accepts TCP connections on `port`. */
export async function accepting(port: number, why: () => string | undefined): Promise<void> {
  const connects = () =>
    new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
  await waitUntil(`port ${port} to accept`, connects, (ok) => ok, 30_000, { hopeless: why, intervalMs: 20 });
}

/** The answer is whole once its head and its Content-Length or chunked body are (servers that keep the connection open). */
const framedAnswerComplete = (recv: Uint8Array): boolean => {
  const head = Buffer.from(recv).indexOf("\r\n\r\n");
  if (head < 0) return false;
  const fields = new TextDecoder("latin1").decode(recv.subarray(0, head)).toLowerCase();
  return /\r\n(content-length|transfer-encoding):/.test(fields) && messageComplete(recv);
};

export interface Proof {
  exchange: RecordedExchange;
  verified: VerifiedSession;
}

/** Whether the session went through a HelloRetryRequest (its transcript starts with message_hash). */
export const helloRetried = (proof: Proof): boolean => readHellos(proof.exchange.relayed).transcript[0]?.[0] === HandshakeType.messageHash;

/** One GET with the hidden credential, proven: the exchange, and the notary's check of it. */
export async function prove(ids: InteropIdentities, port: number, over: Partial<Tls13ClientOptions> = {}, path = "/"): Promise<Proof> {
  const exchange = await recordedExchange(port, requestWithHiddenCredential(TARGET_HOST, CREDENTIAL, path), {
    serverName: TARGET_HOST,
    trustAnchorsPem: [ids.fixture.caPem],
    responseTimeoutMs: 30_000,
    maxRecvBytes: 8 * 1024 * 1024,
    answerComplete: framedAnswerComplete,
    ...over,
  });
  const verified = verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), { serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });
  return { exchange, verified };
}

/**
 * What every proof must show: the server received the credential whole (its answer says so), the notary's check
 * shows the request less exactly the credential, the request rule holds, and the suite is the one expected.
 */
export function expectProven({ exchange, verified }: Proof, suite?: string): void {
  const answer = new TextDecoder().decode(exchange.recv);
  expect(answer).toContain(`received authorization: ${CREDENTIAL}`);
  const sent = new TextDecoder().decode(exchange.sent);
  const start = sent.indexOf(CREDENTIAL);
  expect(verified.sentPartly?.hidden).toEqual([{ start, end: start + CREDENTIAL.length }]);
  expect(new TextDecoder().decode(verified.sentPartly?.bytes)).toBe(sent.replace(CREDENTIAL, "\0".repeat(CREDENTIAL.length)));
  expect(revealedRequestProblem(partlyRevealedDirection(verified.sentPartly!), TARGET_HOST, { maxHiddenSpanBytes: DEFAULT_MAX_HIDDEN_REQUEST_SPAN })).toBeNull();
  expect(verified.recv).toEqual(exchange.recv);
  if (suite) expect(exchange.cipherSuite).toBe(suite);
}

/** Against a server limited to P-256: an X25519 share first gets a HelloRetryRequest, a P-256 share first none. */
export async function expectP256RetryOrNot(ids: InteropIdentities, port: number): Promise<void> {
  const retried = await prove(ids, port);
  expectProven(retried);
  expect(helloRetried(retried)).toBe(true);
  const direct = await prove(ids, port, { keyShares: ["p256"] });
  expectProven(direct);
  expect(helloRetried(direct)).toBe(false);
}
