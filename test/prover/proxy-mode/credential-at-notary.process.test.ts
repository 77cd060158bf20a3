import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { type ProveResult, prove } from "../../../src/client/index.ts";
import { openAead } from "../../../src/tls/aead.ts";
import { type TrafficKeys, nextTrafficSecret, trafficKeys } from "../../../src/tls/key-schedule.ts";
import { ContentType, type TlsRecord, recordAt } from "../../../src/tls/records.ts";
import { readHellos } from "../../../src/tls/session-start.ts";
import type { CipherSuite } from "../../../src/tls/suites.ts";
import { type RelayedBytes, type RevealedKeys, verifyRelayedSession } from "../../../src/tls/verify-session.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary } from "../../../testkit/notary.ts";
import { type NotaryRelay, startNotaryRelay } from "../../../testkit/notary-relay.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../../testkit/prover.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../../testkit/scripted-target.ts";
import { type TcpProxy, startTcpProxy } from "../../../testkit/tcp-proxy.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";

/**
 * The request proven in proxy mode while its credential never leaves the prover: `cli prover start` with a standalone
 * `cli notary start` behind a recording relay (every HTTP body and relay message the notary received), the notary's
 * connection to a TLS 1.3 target through a recording TCP hop (every byte it relayed). A proof of
 * `GET /account?user=42` with `Authorization: Bearer ...` shows the request line and Host; neither the proof nor
 * anything the notary received, decrypted with every key and secret the prover sent it, holds the credential.
 */
const KEY = "credential-at-notary-key-5e0b";
const TOKEN = "tok_live_Q2x9Vw7mZ4kP1sR8";
const ANSWER = '{"user":42,"name":"alice","balance":"1234.50"}';

const tls = tlsFixture();
let target: ScriptedTarget;
/** What the target read: the request heads, credential included. */
const requestsAtTarget: string[] = [];
let hop: TcpProxy;
let notary: KeyedNotary;
let relay: NotaryRelay;
let prover: RunningProver;
/** What the notary received: HTTP bodies by path, and the prover's bytes on the relay socket. */
const notaryBodies: { path: string; body: Uint8Array }[] = [];
const relayMessages: Uint8Array[] = [];

beforeAll(async () => {
  target = await startScriptedTarget(tls, { version: "TLSv1.3" }, ({ socket, request }) => {
    requestsAtTarget.push(request);
    socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${ANSWER.length}\r\n\r\n${ANSWER}`);
  });
  hop = await startTcpProxy({ host: "127.0.0.1", port: target.port });
  notary = await startKeyedNotary(KEY, [
    "host: 127.0.0.1",
    "port: 0",
    "notarization:",
    "  private_key_path: notary.key",
    ...proxyToLocalTargets([hop.port]),
  ]);
  relay = startNotaryRelay(notary.notary.url, {
    request: (path, body) => notaryBodies.push({ path, body }),
    message: (direction, _size, bytes) => direction === "toNotary" && relayMessages.push(bytes.slice()),
  });
  prover = await startProver(SOURCE_CLI, hop.port, { PROVER_NOTARY_URL: relay.url, PROVER_NOTARY_API_KEY: KEY, PROVER_ENGINE_HOSTS: "1" });
}, 180_000);

afterAll(async () => {
  await prover?.stop();
  relay?.stop();
  notary?.notary.process.kill("SIGKILL");
  await hop?.close();
  target?.stop();
}, 60_000);

/** Every form the credential could take in what the notary got or signed. */
const forms = (secret: string): string[] => [secret, Buffer.from(secret).toString("base64").slice(0, 16), Buffer.from(secret).toString("hex").slice(0, 24)];
const latin1 = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");

function recordsOf(stream: Uint8Array): TlsRecord[] {
  const records: TlsRecord[] = [];
  for (let offset = 0, record = recordAt(stream, 0, "relayed"); record; record = recordAt(stream, offset, "relayed")) {
    records.push(record);
    offset += 5 + record.fragment.length;
  }
  return records;
}

/** The nonce of record `seq` under `iv` (RFC 8446 §5.3). */
function nonceOf(iv: Uint8Array, seq: number): Uint8Array {
  const nonce = iv.slice();
  const view = new DataView(nonce.buffer, nonce.byteOffset + nonce.length - 8, 8);
  view.setBigUint64(0, view.getBigUint64(0) ^ BigInt(seq));
  return nonce;
}

/** Every protected record of both directions opened with every key, at every sequence number it could have: what the notary could read. */
function everythingReadable(relayed: RelayedBytes, suite: CipherSuite, keys: TrafficKeys[]): Uint8Array[] {
  const records = [...recordsOf(relayed.clientToServer), ...recordsOf(relayed.serverToClient)].filter((record) => record.type === ContentType.applicationData);
  const opened: Uint8Array[] = [];
  for (const record of records) {
    for (const { key, iv } of keys) {
      for (let seq = 0; seq < records.length; seq++) {
        const plain = openAead(suite.aead, key, nonceOf(iv, seq), record.header, record.fragment);
        if (plain) opened.push(plain);
      }
    }
  }
  return opened;
}

/** Every record key the revealed keys give: each revealed epoch's, and the server's secrets' (with a few key updates). */
function everyKey(suite: CipherSuite, keys: Extract<RevealedKeys, { version: "TLS1.3" }>): TrafficKeys[] {
  const hex = (value: string) => new Uint8Array(Buffer.from(value, "hex"));
  const derived: TrafficKeys[] = [];
  for (const secretHex of [keys.serverHandshakeTrafficSecret, keys.serverApplicationTrafficSecret]) {
    let secret: Uint8Array = hex(secretHex);
    for (let update = 0; update < 4; update++, secret = nextTrafficSecret(suite.hash, secret)) derived.push(trafficKeys(suite, secret));
  }
  for (const epoch of keys.clientEpochs ?? []) if (epoch.key && epoch.iv) derived.push({ key: hex(epoch.key), iv: hex(epoch.iv) });
  return derived;
}

/** `GET /account?user=42` with these headers, proven in proxy mode through the prover and the recorded notary. */
const proveAccount = (headers: Record<string, string>): Promise<ProveResult> =>
  prove({
    prover: prover.url,
    allowTestTrustAnchor: true,
    notaryKeys: [readFileSync(notary.pubPath, "utf8")],
    url: `https://${TARGET_HOST}:${hop.port}/account?user=42`,
    mode: "proxy",
    headers,
    timeoutMs: 60_000,
  });

describe("GET /account?user=42 with Authorization: Bearer, in proxy mode, against a TLS 1.3 target", () => {
  let result: ProveResult;
  beforeAll(async () => {
    result = await proveAccount({ authorization: `Bearer ${TOKEN}` });
  }, 90_000);

  test("the target got the credential; the proof reveals the request line and Host, and not the credential", () => {
    expect(requestsAtTarget.at(-1)).toContain(`authorization: Bearer ${TOKEN}\r\n`);
    expect(new TextDecoder().decode(result.response.body)).toBe(ANSWER);
    expect(result.verified.body).toMatchObject({ mode: "proxy", request: "revealed", tlsVersion: "TLS1.3", serverPort: hop.port });
    const sent = result.verified.sent.text;
    expect(sent).toStartWith(`GET /account?user=42 HTTP/1.1\r\nhost: ${TARGET_HOST}:${hop.port}\r\n`);
    expect(sent).toContain(`authorization: ${"█".repeat(`Bearer ${TOKEN}`.length)}\r\n`);
    for (const form of forms(TOKEN)) expect(result.proofText).not.toContain(form);
  });

  test("nothing the notary received holds the credential, decrypted with every key and secret the prover sent it", () => {
    const attestation = notaryBodies.find(({ path }) => path.endsWith("/attestation"));
    expect(attestation).toBeDefined();
    for (const { body } of notaryBodies) for (const form of forms(TOKEN)) expect(latin1(body)).not.toContain(form);
    const keys = (JSON.parse(new TextDecoder().decode(attestation!.body)) as { keys: RevealedKeys }).keys;
    if (keys.version !== "TLS1.3") throw new Error("expected TLS 1.3 keys");
    // Record keys and IVs of the revealed epochs only: never a client traffic secret.
    expect(Object.keys(keys).sort()).toEqual(["clientEpochs", "serverApplicationTrafficSecret", "serverHandshakeTrafficSecret", "version"]);
    expect(keys.clientEpochs!.map((epoch) => epoch.key !== undefined)).toEqual([true, false, true]);

    // What the notary relayed, as the hop between it and the target carried it; the prover's relay socket carried
    // that and, once the target had closed, the client's close_notify, which the notary could no longer pass on.
    const connections = hop.recorded();
    expect(connections).toHaveLength(1);
    const fromProver = new Uint8Array(Buffer.concat(relayMessages));
    expect(Buffer.from(fromProver.subarray(0, connections[0]!.toServer.length)).equals(Buffer.from(connections[0]!.toServer))).toBe(true);
    const relayed: RelayedBytes = { clientToServer: fromProver, serverToClient: connections[0]!.toClient };
    for (const form of forms(TOKEN)) expect(latin1(relayed.clientToServer) + latin1(relayed.serverToClient)).not.toContain(form);

    // The notary's own reading: the request less its hidden epoch, of exactly the credential's length.
    const verified = verifyRelayedSession(relayed, keys, { serverName: TARGET_HOST, trustAnchorsPem: [tls.caPem], now: new Date() });
    expect(verified.sentPartly!.hidden.map((span) => span.end - span.start)).toEqual([`Bearer ${TOKEN}`.length]);
    expect(latin1(verified.sentPartly!.bytes)).toStartWith("GET /account?user=42 HTTP/1.1\r\n");

    // Everything any key it was given opens: the request's revealed epochs and the answer, never the credential.
    const suite = readHellos(relayed).suite;
    const readable = everythingReadable(relayed, suite, everyKey(suite, keys)).map(latin1);
    expect(readable.some((text) => text.includes("GET /account?user=42 HTTP/1.1"))).toBe(true);
    expect(readable.some((text) => text.includes(ANSWER))).toBe(true);
    for (const text of readable) for (const form of forms(TOKEN)) expect(text).not.toContain(form);
  });
});

describe("X-Api-Key with no T-REDACTED at all: hidden by default (its name says it holds a secret), kept from the notary", () => {
  const API_KEY = "ak_live_7Hq2Zr9Lm4NpX3";
  let result: ProveResult;
  let bodiesBefore = 0;
  let messagesBefore = 0;
  let connectionsBefore = 0;
  beforeAll(async () => {
    bodiesBefore = notaryBodies.length;
    messagesBefore = relayMessages.length;
    connectionsBefore = hop.recorded().length;
    result = await proveAccount({ "x-api-key": API_KEY, "x-account": "42" });
  }, 90_000);

  test("the proof shows every revealed header before the hidden key, lists it as a default, and holds no byte of it; nor does anything the notary received", () => {
    expect(requestsAtTarget.at(-1)).toContain(`x-api-key: ${API_KEY}\r\n`);
    const sent = result.verified.sent.text;
    expect(sent).toStartWith(`GET /account?user=42 HTTP/1.1\r\nhost: ${TARGET_HOST}:${hop.port}\r\n`);
    expect(sent).toContain("x-account: 42\r\n");
    expect(sent).toEndWith(`x-api-key: ${"█".repeat(API_KEY.length)}\r\n\r\n`);
    expect(result.verified.body.redactions.map((r) => r.pattern)).toContain("default:req:header:x-api-key");
    for (const form of forms(API_KEY)) {
      expect(result.proofText).not.toContain(form);
      for (const { body } of notaryBodies.slice(bodiesBefore)) expect(latin1(body)).not.toContain(form);
      for (const message of relayMessages.slice(messagesBefore)) expect(latin1(message)).not.toContain(form);
    }
    // Opened with every key the prover sent the notary for this exchange: the key is in none of it.
    const attestation = notaryBodies.slice(bodiesBefore).find(({ path }) => path.endsWith("/attestation"));
    const keys = (JSON.parse(new TextDecoder().decode(attestation!.body)) as { keys: RevealedKeys }).keys;
    if (keys.version !== "TLS1.3") throw new Error("expected TLS 1.3 keys");
    const connection = hop.recorded()[connectionsBefore]!;
    const relayed: RelayedBytes = { clientToServer: connection.toServer, serverToClient: connection.toClient };
    const suite = readHellos(relayed).suite;
    const readable = everythingReadable(relayed, suite, everyKey(suite, keys)).map(latin1);
    expect(readable.some((text) => text.includes("x-account: 42"))).toBe(true);
    for (const text of readable) for (const form of forms(API_KEY)) expect(text).not.toContain(form);
  });
});
