import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AddressInfo } from "node:net";
import { type Server as TlsServer, createServer as createTlsServer } from "node:tls";
import { openRelaySocket } from "../../src/prover/proxy-mode/relay-socket.ts";
import { networkTransport } from "../../src/prover/notary/transport.ts";
import { keysToReveal } from "../../src/tls/verify-session.ts";
import { clientHelloFor } from "../../testkit/client-hello.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { sample, scrapeMetrics } from "../../testkit/metrics.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { type RawNotary, createProxySession, openRawRelay, postProxyAttestation, postProxySession } from "../../testkit/raw-relay.ts";
import { type RecordingListener, startRecordingListener } from "../../testkit/recording-listener.ts";
import { getOverRelay } from "../../testkit/relayed-get.ts";
import { errorData, openStream } from "../../testkit/sse.ts";
import { type VersionedTarget, startVersionedTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type UnacceptingListener, startUnacceptingListener } from "../../testkit/unaccepting-listener.ts";
import { eventually } from "../../testkit/wait.ts";
import { type RunningNotary, freePort, notaryConfig, startNotary } from "../../testkit/notary.ts";

/**
 * A standalone `cli notary start` in proxy mode, driven over its real routes by a prover of the test's making (raw
 * session, relay and attestation calls) and by `cli prover start`: its places, its timeouts and its relay rule hold
 * against a caller that does not play along. Two notaries: `tight` (3 places, 2 s idle limit, 64-byte proxy sizes,
 * and no test CA, so it refuses to sign for the test target) and `slow` (connect_timeout 3 s, one connection in
 * progress at a time, sessions of 3 s).
 */
const IDLE_S = 2;
const SESSION_S = 3;
const CONNECT_S = 3;
/** The raw relay limit each way for max_sent_data / max_recv_data 64 (src/notary/proxy-mode/relay.ts tlsBytesFor). */
const RELAY_LIMIT = 64 + 1 + 64 * 1024;

let tlsTarget: VersionedTarget;
/** A TLS target whose answer has no length (it ends when the connection does), and pauses half-way. */
let closeDelimited: TlsServer;
let raw: RecordingListener;
let unaccepting: UnacceptingListener;
let closedPort: number;
let tight: RunningNotary;
let slow: RunningNotary;
let prover: RunningProver;

function proxyYaml(settings: string[]): string {
  const ports = [tlsTarget.port, raw.port, unaccepting.port, closedPort, portOf(closeDelimited)];
  return [
    "host: 127.0.0.1",
    "port: 0",
    "concurrency: 3",
    "log:",
    "  level: INFO",
    "proxy:",
    "  enabled: true",
    "  open: true",
    "  allow_private_targets: true",
    "  allowed_ports: []",
    `  resolve: [${ports.map((port) => `"${TARGET_HOST}:${port}:127.0.0.1"`).join(", ")}]`,
    ...settings.map((line) => `  ${line}`),
    "",
  ].join("\n");
}

const portOf = (server: TlsServer) => (server.address() as AddressInfo).port;

/** Answers any request with 200 and a body marked by the connection's end only, silent for `pauseMs` half-way. */
async function startCloseDelimitedTarget(pauseMs: number): Promise<TlsServer> {
  const tls = tlsFixture();
  const server = createTlsServer({ cert: tls.chainPem, key: tls.leafKeyPem }, (socket) => {
    socket.once("data", () => {
      socket.write(`HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n{"part":1`);
      setTimeout(() => socket.end(',"part":2}'), pauseMs);
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

beforeAll(async () => {
  [tlsTarget, raw, unaccepting, closeDelimited] = await Promise.all([
    startVersionedTarget(tlsFixture(), "TLSv1.3"),
    startRecordingListener(),
    startUnacceptingListener(),
    startCloseDelimitedTarget(4 * IDLE_S * 1000),
  ]);
  closedPort = freePort();
  [tight, slow] = await Promise.all([
    startNotary(notaryConfig(proxyYaml(["max_sent_data: 64", "max_recv_data: 64", `idle_timeout: ${IDLE_S}`, "max_pending_connects: 3"])), {
      TLSN_TEST_TRUST_ANCHOR: "",
      NOTARY_THREADS: "1",
    }),
    startNotary(notaryConfig(proxyYaml([`connect_timeout: ${CONNECT_S}`, "max_pending_connects: 1", `session_timeout: ${SESSION_S}`, "idle_timeout: 60"])), {
      NOTARY_THREADS: "1",
    }),
  ]);
  prover = await startProver(SOURCE_CLI, tlsTarget.port, { PROVER_NOTARY_URL: tight.url, PROVER_ENGINE_HOSTS: "1" });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  for (const notary of [tight, slow]) notary?.process.kill("SIGKILL");
  tlsTarget?.stop();
  raw?.stop();
  unaccepting?.close();
  closeDelimited?.close();
}, 60_000);

const activeProxySessions = async (notary: RawNotary) =>
  ((await (await fetch(`${notary.url}/info`)).json()) as { activeProxySessions: number }).activeProxySessions;
const placesFree = async (notary: RawNotary) => expect(await eventually(() => activeProxySessions(notary), (n) => n === 0, 20_000)).toBe(0);
const release = (notary: RawNotary, id: string) => fetch(`${notary.url}/proxy-session/${id}`, { method: "DELETE" });
const refusals = async (notary: RawNotary, reason: string) => sample(await scrapeMetrics(notary.url), "tlsproof_notary_proxy_refusals_total", { reason }) ?? 0;
const errorOf = async (response: Response) => ({ status: response.status, ...((await response.json()) as { error: { code: string; message: string } }).error });

/** Any well-formed attestation body: the limits and races below are decided before its keys are looked at. */
const attestationBody = () => ({
  requestId: crypto.randomUUID(),
  keys: { version: "TLS1.3", serverHandshakeTrafficSecret: "00".repeat(32), serverApplicationTrafficSecret: "00".repeat(32) },
  redactions: [],
});

/** A session on `notary` to the raw recording target, and the index its connection there will have. */
async function rawSession(notary: RawNotary): Promise<{ sessionId: string; connection: number }> {
  const connection = raw.connections().length;
  const sessionId = await createProxySession(notary, TARGET_HOST, raw.port);
  await eventually(() => raw.connections().length, (n) => n > connection, 10_000);
  return { sessionId, connection };
}

/** One GET through the notary's relay with the prover's own TLS client; the relay socket and what it carried. */
async function relayedGet(notary: RawNotary, path: string) {
  const sessionId = await createProxySession(notary, TARGET_HOST, tlsTarget.port);
  const relay = await openRelaySocket((listener) => networkTransport.openSocket(`${notary.url.replace(/^http/, "ws")}/relay?sessionId=${sessionId}`, listener, 10_000));
  const exchange = getOverRelay(relay, path, 30_000);
  return { sessionId, relay, exchange };
}

describe("starting a notary in proxy mode", () => {
  test("without auth and without proxy.open: exit 2 and one line saying why", async () => {
    const yaml = proxyYaml([]).replace("  open: true\n", "");
    const result = await runCli(SOURCE_CLI, ["notary", "start", "--config", notaryConfig(yaml)]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim().split("\n")).toEqual([
      "error: notary config: proxy.enabled is true and auth is off, so anyone could use this notary as a TLS relay; turn auth on, or set proxy.open: true to accept that",
    ]);
  }, 30_000);
});

describe("a proxy session's place", () => {
  test("20 creates at once against 3 places: exactly 3 sessions, 17 refusals with Retry-After; given back, the places serve again", async () => {
    await placesFree(tight);
    const refusedBefore = await refusals(tight, "over_capacity");
    const answers = await Promise.all(Array.from({ length: 20 }, () => postProxySession(tight, TARGET_HOST, raw.port)));
    const created = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status !== 200);
    expect(created.length).toBe(3);
    for (const answer of refused) {
      expect(answer.headers.get("retry-after")).toBe("5");
      expect(await errorOf(answer)).toEqual({ status: 503, code: "over_capacity", message: "the notary is running its maximum of 3 proxy sessions" });
    }
    expect(await refusals(tight, "over_capacity")).toBe(refusedBefore + 17);
    expect(tight.log()).toMatch(/proxy session refused.*reason=over_capacity/);
    const ids = await Promise.all(created.map(async (answer) => ((await answer.json()) as { sessionId: string }).sessionId));
    await Promise.all(ids.map((id) => release(tight, id)));
    expect(await activeProxySessions(tight)).toBe(0);
    const again = await Promise.all(Array.from({ length: 3 }, () => createProxySession(tight, TARGET_HOST, raw.port)));
    await Promise.all(again.map((id) => release(tight, id)));
  }, 60_000);

  test("a create that fails gives its place back: more failures than places, then every place still serves", async () => {
    await placesFree(tight);
    for (let i = 0; i < 4; i++) {
      expect(await errorOf(await postProxySession(tight, TARGET_HOST, closedPort))).toMatchObject({ status: 502, code: "target_unreachable" });
    }
    const ids = await Promise.all(Array.from({ length: 3 }, () => createProxySession(tight, TARGET_HOST, raw.port)));
    await Promise.all(ids.map((id) => release(tight, id)));
  }, 30_000);

  test("an IP address is refused before any connection: a ClientHello names no address, so no relay could pass", async () => {
    const connections = raw.connections().length;
    expect(await errorOf(await postProxySession(tight, "127.0.0.1", raw.port))).toEqual({
      status: 403,
      code: "target_forbidden",
      message: "proxy mode needs a host name: a ClientHello carries no server name for an IP address",
    });
    expect(raw.connections().length).toBe(connections);
  });

  test("a target that never accepts: target_timeout after connect_timeout, meanwhile the next connection waits its turn, and no place is kept", async () => {
    await placesFree(slow);
    const stuck = postProxySession(slow, TARGET_HOST, unaccepting.port);
    expect(await eventually(() => activeProxySessions(slow), (n) => n === 1, 10_000)).toBe(1);
    const next = await postProxySession(slow, TARGET_HOST, raw.port);
    expect(next.headers.get("retry-after")).toBe("5");
    expect(await errorOf(next)).toEqual({ status: 503, code: "over_capacity", message: "the notary is already connecting to 1 targets; try again shortly" });
    expect(await errorOf(await stuck)).toEqual({
      status: 504,
      code: "target_timeout",
      message: `the target did not accept the notary's connection within ${CONNECT_S * 1000} ms`,
    });
    expect(await activeProxySessions(slow)).toBe(0);
    expect(slow.log()).toMatch(/proxy session refused.*reason=connects_pending/);
    await release(slow, await createProxySession(slow, TARGET_HOST, raw.port));
  }, 30_000);
});

describe("the relay's first bytes", () => {
  test.each([
    ["plain HTTP", async () => new TextEncoder().encode(`GET / HTTP/1.1\r\nHost: ${TARGET_HOST}\r\n\r\n`), "the client's first bytes are not a TLS handshake record"],
    ["a ClientHello for another server", () => clientHelloFor("elsewhere.example"), `the ClientHello names another server than ${TARGET_HOST}`],
    ["a ClientHello naming no server", () => clientHelloFor(), `the ClientHello names no server (no SNI), not ${TARGET_HOST}`],
  ])("%s: the relay is closed with its reason and not one byte reaches the target", async (_what, bytes, reason) => {
    const refusedBefore = await refusals(tight, "first_flight");
    const { sessionId, connection } = await rawSession(tight);
    const relay = await openRawRelay(tight, sessionId);
    relay.send(await bytes());
    expect(await relay.closed).toEqual({ code: 4000, reason: `target_forbidden: relay refused: ${reason}` });
    await raw.closedConnections(connection + 1);
    expect(raw.connections()[connection]!.bytes.length).toBe(0);
    expect(await refusals(tight, "first_flight")).toBe(refusedBefore + 1);
  }, 30_000);

  test("a ClientHello for the session's server passes whole, however the prover cut it into messages", async () => {
    const hello = await clientHelloFor(TARGET_HOST.toUpperCase());
    const { sessionId, connection } = await rawSession(tight);
    const relay = await openRawRelay(tight, sessionId);
    for (const [start, end] of [[0, 1], [1, 6], [6, 300], [300, hello.length]] as const) relay.send(hello.subarray(start, end));
    const passed = await eventually(() => raw.connections()[connection]!.bytes, (bytes) => bytes.length >= hello.length, 10_000);
    expect(Buffer.from(passed).equals(Buffer.from(hello))).toBe(true);
    await release(tight, sessionId);
  }, 30_000);
});

describe("a proxy session's time", () => {
  test("an attached relay that carries nothing is closed after idle_timeout, saying so", async () => {
    await placesFree(tight);
    const refusedBefore = await refusals(tight, "idle");
    const { sessionId } = await rawSession(tight);
    const relay = await openRawRelay(tight, sessionId);
    expect(await relay.closed).toEqual({ code: 4000, reason: `session_timeout: no byte passed the relay either way for ${IDLE_S} s` });
    expect(await activeProxySessions(tight)).toBe(0);
    expect(await refusals(tight, "idle")).toBe(refusedBefore + 1);
    expect(tight.log()).toMatch(/proxy session refused.*reason=idle/);
  }, 30_000);

  test("a session whose relay socket never comes holds its place no longer than idle_timeout", async () => {
    await placesFree(tight);
    const { sessionId } = await rawSession(tight);
    expect(await activeProxySessions(tight)).toBe(1);
    await placesFree(tight);
    await expect(openRawRelay(tight, sessionId)).rejects.toThrow("refused the relay socket");
  }, 30_000);

  test("a relay that keeps carrying bytes still ends at session_timeout", async () => {
    await placesFree(slow);
    const { sessionId, connection } = await rawSession(slow);
    const relay = await openRawRelay(slow, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    // Well inside the idle limit, until the notary ends the session.
    const ticker = setInterval(() => relay.ws.readyState === WebSocket.OPEN && relay.send(Uint8Array.of(0)), 200);
    const closed = await relay.closed;
    clearInterval(ticker);
    expect(closed).toEqual({ code: 4000, reason: `session_timeout: the proxy session outlived its ${SESSION_S} s` });
    await raw.closedConnections(connection + 1);
    expect(await activeProxySessions(slow)).toBe(0);
  }, 30_000);
});

describe("one relay, one attestation", () => {
  test("a second relay socket for a session is refused, at once or side by side; the first keeps relaying", async () => {
    const { sessionId, connection } = await rawSession(tight);
    const first = await openRawRelay(tight, sessionId);
    await expect(openRawRelay(tight, sessionId)).rejects.toThrow("refused the relay socket");
    const hello = await clientHelloFor(TARGET_HOST);
    first.send(hello);
    expect((await eventually(() => raw.connections()[connection]!.bytes, (bytes) => bytes.length >= hello.length, 10_000)).length).toBe(hello.length);
    await release(tight, sessionId);

    // Two sockets opened at once both pass the upgrade's check; the session takes only the first to open.
    const { sessionId: shared } = await rawSession(tight);
    const both = await Promise.allSettled([openRawRelay(tight, shared), openRawRelay(tight, shared)]);
    const opened = both.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    const closes = await Promise.race([Promise.any(opened.map((relay) => relay.closed)), Bun.sleep(2_000).then(() => undefined)]);
    // Either the second was refused at the upgrade, or it was closed as used the moment it opened.
    expect(opened.length === 1 || closes?.code === 1008).toBe(true);
    await release(tight, shared);
  }, 30_000);

  test("two attestations at once for one session: the one that comes second is 409 session_taken", async () => {
    const { sessionId } = await rawSession(tight);
    const relay = await openRawRelay(tight, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    // Both asked while the relay is open: the one that takes the session waits for the relay's end.
    const both = [postProxyAttestation(tight, sessionId, attestationBody()), postProxyAttestation(tight, sessionId, attestationBody())].map((answer) =>
      answer.then(errorOf),
    );
    expect(await Promise.race(both)).toEqual({ status: 409, code: "session_taken", message: "this session's attestation was already requested" });
    relay.ws.close();
    const codes = (await Promise.all(both)).map((error) => error.code);
    // The session's one attestation ran, on bytes that are no TLS session, and was refused for that.
    expect(codes.sort()).toEqual(["session_taken", "transcript_invalid"]);
  }, 30_000);
});

describe("the relay's byte limits", () => {
  test("the prover sends more than max_sent_data allows: the relay ends, the excess never reaches the target, the attestation is refused", async () => {
    const { sessionId, connection } = await rawSession(tight);
    const relay = await openRawRelay(tight, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    // In messages of 16 KiB, as the prover's relay socket sends them (the notary takes at most 64 KiB in one).
    for (let sent = 0; sent < RELAY_LIMIT; sent += 16 * 1024) relay.send(new Uint8Array(16 * 1024));
    expect(await relay.closed).toEqual({ code: 4000, reason: `session_failed: the prover sent more than this notary relays (${RELAY_LIMIT} bytes)` });
    await raw.closedConnections(connection + 1);
    expect(raw.connections()[connection]!.bytes.length).toBeLessThanOrEqual(RELAY_LIMIT);
    expect(await errorOf(await postProxyAttestation(tight, sessionId, attestationBody()))).toEqual({
      status: 500,
      code: "session_failed",
      message: `the prover sent more than this notary relays (${RELAY_LIMIT} bytes)`,
    });
  }, 30_000);

  test("the target sends more than max_recv_data allows: the prover's exchange fails with the notary's reason, the attestation is refused", async () => {
    const { sessionId, relay, exchange } = await relayedGet(tight, "/big?bytes=200000");
    // The relay ends mid-answer: a cut answer, or a broken TLS stream, whichever the client saw.
    await exchange.catch(() => undefined);
    expect(relay.endedByNotary()).toMatchObject({
      code: "session_failed",
      message: `the notary ended the relay: the target sent more than this notary relays (${RELAY_LIMIT} bytes)`,
    });
    expect(relay.receivedBytes()).toBeGreaterThan(0);
    expect(relay.receivedBytes()).toBeLessThanOrEqual(RELAY_LIMIT);
    expect(await errorOf(await postProxyAttestation(tight, sessionId, attestationBody()))).toMatchObject({ status: 500, code: "session_failed" });
  }, 30_000);
});

describe("a prover on this notary", () => {
  async function proxyCall(path: string, port = tlsTarget.port) {
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, 60_000);
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${port}${path}`, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" },
    });
    const [event] = await stream.events;
    return { response, event: errorData(event!) };
  }

  test("the notary ends a relay gone quiet: /proxy and the proof stream say session_timeout with the notary's reason", async () => {
    const { response, event } = await proxyCall("/slow?ms=20000");
    const expected = { code: "session_timeout", message: `the notary ended the relay: no byte passed the relay either way for ${IDLE_S} s` };
    expect(await errorOf(response)).toEqual({ status: 504, ...expected });
    expect(event).toMatchObject(expected);
  }, 60_000);

  test("the notary ends the relay during the TLS handshake (a target that never speaks TLS): its reason, not a handshake failure", async () => {
    const { response, event } = await proxyCall("/", raw.port);
    const expected = { code: "session_timeout", message: `the notary ended the relay: no byte passed the relay either way for ${IDLE_S} s` };
    expect(await errorOf(response)).toEqual({ status: 504, ...expected });
    expect(event).toMatchObject(expected);
  }, 60_000);

  test("the notary ends a relay between two records of an answer that only the connection's end delimits: no half answer is passed on", async () => {
    const { response, event } = await proxyCall("/", portOf(closeDelimited));
    const expected = { code: "session_timeout", message: `the notary ended the relay: no byte passed the relay either way for ${IDLE_S} s` };
    expect(await errorOf(response)).toEqual({ status: 504, ...expected });
    expect(event).toMatchObject(expected);
  }, 60_000);

  test("a notary that refuses to sign: /proxy has its answer, the proof stream the notary's refusal", async () => {
    const { response, event } = await proxyCall("/data");
    expect(response.status).toBe(200);
    expect(response.headers.get("t-proof-id")).not.toBeNull();
    expect(event).toMatchObject({ code: "tls_untrusted" });
  }, 60_000);
});
