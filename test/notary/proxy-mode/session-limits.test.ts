/**
 * A proxy-mode notary's places, timeouts and relay rule, over its real routes in this process with limits of a
 * fraction of a second (the standalone notary's own are tested in proxy-abuse.process.test.ts): a caller that does
 * not play along holds no place for long and passes no byte that is not TLS to the session's server.
 */
import { type Server, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { NotaryServer } from "../../../src/app/notary.ts";
import { clientHelloFor } from "../../../testkit/client-hello.ts";
import { sample, scrapeMetrics } from "../../../testkit/metrics.ts";
import { createProxySession, openRawRelay, postProxyAttestation, postProxySession } from "../../../testkit/raw-relay.ts";
import { type RecordingListener, startRecordingListener } from "../../../testkit/recording-listener.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { type UnacceptingListener, startUnacceptingListener } from "../../../testkit/unaccepting-listener.ts";
import { openUnreadWebSocket } from "../../../testkit/unread-websocket.ts";
import { keptLog } from "../../../testkit/kept-log.ts";
import { eventually } from "../../../testkit/wait.ts";
import { startProxyNotary } from "./support/proxy-notary.ts";

// Each test takes well under a second: one that waits for an end that never comes fails in seconds, not minutes.
setDefaultTimeout(3_000);

const IDLE_MS = 150;
const SESSION_MS = 450;
const CONNECT_MS = 150;
/** The raw relay limit each way for proxy sizes of 64 bytes (relay.ts, tlsBytesFor). */
const RELAY_LIMIT = 64 + 1 + 64 * 1024;

let raw: RecordingListener;
/** A target that ends its connection as soon as bytes come. */
let closing: Server;
let unaccepting: UnacceptingListener;
let closedPort: number;
/** Two places, two connections in progress at once; `slow`: three places, one connection in progress at a time. */
let notary: NotaryServer;
let slow: NotaryServer;

/** What the notaries logged, each line its message and fields (`name=value`). */
const logged = keptLog((message, fields) => `${message}${Object.entries(fields).map(([name, value]) => ` ${name}=${value}`).join("")}`);
const linesOf = (sessionId: string) => logged.lines.filter((line) => line.includes(`sessionId=${sessionId}`));
/** The line a session's creation logs: the target it was opened for. */
const createdLine = (sessionId: string, port = raw.port) => `session created sessionId=${sessionId} mode=proxy serverName=${TARGET_HOST} port=${port}`;

function limitedNotary(ports: number[], places: { concurrency: number; maxPendingConnects: number }): NotaryServer {
  return startProxyNotary({
    ports,
    concurrency: places.concurrency,
    proxy: {
      maxSentData: 64,
      maxRecvData: 64,
      sessionTimeoutMs: SESSION_MS,
      idleTimeoutMs: IDLE_MS,
      connectTimeoutMs: CONNECT_MS,
      maxPendingConnects: places.maxPendingConnects,
    },
    log: logged.log,
  });
}

beforeAll(async () => {
  [raw, unaccepting] = await Promise.all([startRecordingListener(), startUnacceptingListener()]);
  closing = createServer((socket) => {
    socket.on("error", () => {});
    socket.once("data", () => socket.end());
  });
  await new Promise<void>((resolve) => closing.listen(0, "127.0.0.1", resolve));
  const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  closedPort = closed.port;
  closed.stop(true);
  const ports = [raw.port, unaccepting.port, closedPort, (closing.address() as { port: number }).port];
  notary = limitedNotary(ports, { concurrency: 2, maxPendingConnects: 2 });
  slow = limitedNotary(ports, { concurrency: 3, maxPendingConnects: 1 });
});

afterAll(async () => {
  await Promise.all([notary?.stop(0), slow?.stop(0)]);
  raw?.stop();
  closing?.close();
  unaccepting?.close();
});

const activeProxySessions = async (on = notary) => ((await (await fetch(`${on.url}/info`)).json()) as { activeProxySessions: number }).activeProxySessions;
const placesFree = async (on = notary) => expect(await eventually(() => activeProxySessions(on), (n) => n === 0, 5_000, { intervalMs: 10 })).toBe(0);
const release = (id: string, on = notary) => fetch(`${on.url}/proxy-session/${id}`, { method: "DELETE" });
const refusals = async (reason: string, on = notary) => sample(await scrapeMetrics(on.url), "tlsproof_notary_proxy_refusals_total", { reason }) ?? 0;
const errorOf = async (response: Response) => ({ status: response.status, ...((await response.json()) as { error: { code: string; message: string } }).error });

/** A session to the recording target (named `serverName`), and the index its connection there has. */
async function rawSession(serverName = TARGET_HOST): Promise<{ sessionId: string; connection: number }> {
  const connection = raw.connections().length;
  const sessionId = await createProxySession(notary, serverName, raw.port);
  await eventually(() => raw.connections().length, (n) => n > connection, 5_000, { intervalMs: 5 });
  return { sessionId, connection };
}

/** Any well-formed attestation body: what is tested here is decided before its keys are looked at. */
const attestationBody = () => ({
  requestId: crypto.randomUUID(),
  keys: { version: "TLS1.3", serverHandshakeTrafficSecret: "00".repeat(32), serverApplicationTrafficSecret: "00".repeat(32) },
  redactions: [],
});

describe("a proxy session's place", () => {
  test("creates at once against 2 places: 2 sessions, the rest over_capacity; each session's end gives its place back", async () => {
    await placesFree();
    const before = await refusals("over_capacity");
    const answers = await Promise.all(Array.from({ length: 5 }, () => postProxySession(notary, TARGET_HOST, raw.port)));
    const created = answers.filter((answer) => answer.status === 200);
    expect(created.length).toBe(2);
    for (const answer of answers.filter((answer) => answer.status !== 200)) {
      expect(await errorOf(answer)).toEqual({ status: 503, code: "over_capacity", message: "the notary is running its maximum of 2 proxy sessions" });
    }
    expect(await refusals("over_capacity")).toBe(before + 3);
    expect(await activeProxySessions()).toBe(2);
    const [first, second] = await Promise.all(created.map(async (answer) => ((await answer.json()) as { sessionId: string }).sessionId));
    await release(first!);
    expect(await activeProxySessions()).toBe(1);
    expect(linesOf(first!)).toEqual([createdLine(first!), `proxy session ended sessionId=${first} reason=released by the prover`]);
    // A released session is gone: no relay, no attestation.
    await expect(openRawRelay(notary, first!)).rejects.toThrow("refused the relay socket");
    expect(await errorOf(await postProxyAttestation(notary, first!, attestationBody()))).toMatchObject({ status: 404, code: "not_found" });
    const third = await createProxySession(notary, TARGET_HOST, raw.port);
    await Promise.all([release(second!), release(third)]);
    expect(await activeProxySessions()).toBe(0);
  });

  test("releasing a session that is unknown or gone is no error", async () => {
    expect((await release(crypto.randomUUID())).status).toBe(204);
  });

  test("a create that fails gives its place back: more failures than places, then every place still serves", async () => {
    await placesFree();
    for (let i = 0; i < 3; i++) {
      expect(await errorOf(await postProxySession(notary, TARGET_HOST, closedPort))).toMatchObject({ status: 502, code: "target_unreachable" });
    }
    const ids = await Promise.all([createProxySession(notary, TARGET_HOST, raw.port), createProxySession(notary, TARGET_HOST, raw.port)]);
    await Promise.all(ids.map((id) => release(id)));
  });

  test("an IP address is refused before any connection or place", async () => {
    const connections = raw.connections().length;
    expect(await errorOf(await postProxySession(notary, "127.0.0.1", raw.port))).toEqual({
      status: 403,
      code: "target_forbidden",
      message: "proxy mode needs a host name: a ClientHello carries no server name for an IP address",
    });
    expect(raw.connections().length).toBe(connections);
    expect(await activeProxySessions()).toBe(0);
  });

  test("a target that never accepts: target_timeout after the connect timeout; meanwhile the next connection is refused, and no place is kept", async () => {
    await placesFree(slow);
    const before = await refusals("connects_pending", slow);
    const stuck = postProxySession(slow, TARGET_HOST, unaccepting.port);
    expect(await eventually(() => activeProxySessions(slow), (n) => n === 1, 5_000, { intervalMs: 5 })).toBe(1);
    expect(await errorOf(await postProxySession(slow, TARGET_HOST, raw.port))).toEqual({
      status: 503,
      code: "over_capacity",
      message: "the notary is already connecting to 1 targets; try again shortly",
    });
    expect(await refusals("connects_pending", slow)).toBe(before + 1);
    expect(await errorOf(await stuck)).toEqual({ status: 504, code: "target_timeout", message: `the target did not accept the notary's connection within ${CONNECT_MS} ms` });
    expect(await activeProxySessions(slow)).toBe(0);
    await release(await createProxySession(slow, TARGET_HOST, raw.port), slow);
  });
});

describe("the relay's first bytes", () => {
  test.each([
    ["plain HTTP", async () => new TextEncoder().encode(`GET / HTTP/1.1\r\nHost: ${TARGET_HOST}\r\n\r\n`), "the client's first bytes are not a TLS handshake record"],
    ["a ClientHello for another server", () => clientHelloFor("elsewhere.example"), `the ClientHello names another server than ${TARGET_HOST}`],
    ["a ClientHello naming the server with a trailing dot (RFC 6066 sends none)", () => clientHelloFor(`${TARGET_HOST}.`), `the ClientHello's SNI ends in a dot (RFC 6066 sends none); expected ${TARGET_HOST}`],
  ])("%s: the relay is closed with its reason, not one byte reaches the target, the place is free", async (_what, bytes, reason) => {
    const before = await refusals("first_flight");
    const { sessionId, connection } = await rawSession();
    const relay = await openRawRelay(notary, sessionId);
    relay.send(await bytes());
    // Sent right behind, these reach no session: its end closed its socket, which takes no message after.
    relay.send(Uint8Array.of(7, 7, 7));
    expect(await relay.closed).toEqual({ code: 4000, reason: `target_forbidden: relay refused: ${reason}` });
    await raw.closedConnections(connection + 1);
    expect(raw.connections()[connection]!.bytes.length).toBe(0);
    expect(await refusals("first_flight")).toBe(before + 1);
    // The log says why, never a byte relayed.
    expect(linesOf(sessionId)).toEqual([createdLine(sessionId), `proxy session refused sessionId=${sessionId} reason=first_flight code=target_forbidden error=relay refused: ${reason}`]);
    expect(await activeProxySessions()).toBe(0);
  });

  test("a ClientHello for the session's server passes whole, however it was cut into messages, and what follows passes too", async () => {
    const hello = await clientHelloFor(TARGET_HOST);
    const { sessionId, connection } = await rawSession();
    const relay = await openRawRelay(notary, sessionId);
    for (const [start, end] of [[0, 1], [1, 6], [6, 300], [300, hello.length]] as const) relay.send(hello.subarray(start, end));
    relay.send(Uint8Array.of(7, 7, 7));
    const passed = await eventually(() => raw.connections()[connection]!.bytes, (bytes) => bytes.length >= hello.length + 3, 5_000, { intervalMs: 5 });
    expect(Buffer.from(passed).equals(Buffer.concat([hello, Uint8Array.of(7, 7, 7)]))).toBe(true);
    await release(sessionId);
  });
});

describe("a session for a fully qualified name (a trailing dot)", () => {
  test("is the session of the name without the dot: that name is logged, and a ClientHello naming it passes", async () => {
    const hello = await clientHelloFor(TARGET_HOST);
    const { sessionId, connection } = await rawSession(`${TARGET_HOST}.`);
    expect(linesOf(sessionId)).toEqual([createdLine(sessionId)]);
    const relay = await openRawRelay(notary, sessionId);
    relay.send(hello);
    const passed = await eventually(() => raw.connections()[connection]!.bytes, (bytes) => bytes.length >= hello.length, 5_000, { intervalMs: 5 });
    expect(Buffer.from(passed).equals(Buffer.from(hello))).toBe(true);
    await release(sessionId);
  });

  test("a name with an empty label is refused as the request's fault before anything is dialled", async () => {
    const connections = raw.connections().length;
    expect(await errorOf(await postProxySession(notary, `${TARGET_HOST}..`, raw.port))).toEqual({
      status: 400,
      code: "invalid_body",
      message: "proxy session request: serverName: expected a host name without an empty label",
    });
    expect(raw.connections().length).toBe(connections);
  });
});

describe("a proxy session's time", () => {
  test("an attached relay that carries nothing is closed after the idle timeout, not before, saying so", async () => {
    await placesFree();
    const before = await refusals("idle");
    // The idle time runs from the session's creation (the socket's coming counts no byte).
    const asked = performance.now();
    const { sessionId } = await rawSession();
    const relay = await openRawRelay(notary, sessionId);
    expect(await relay.closed).toEqual({ code: 4000, reason: `session_timeout: no byte passed the relay either way for ${IDLE_MS / 1000} s` });
    expect(performance.now() - asked).toBeGreaterThanOrEqual(IDLE_MS - 5);
    expect(linesOf(sessionId)).toContain(
      `proxy session refused sessionId=${sessionId} reason=idle code=session_timeout error=no byte passed the relay either way for ${IDLE_MS / 1000} s`,
    );
    expect(await activeProxySessions()).toBe(0);
    expect(await refusals("idle")).toBe(before + 1);
  });

  test("a session whose relay socket never comes holds its place no longer than the idle timeout", async () => {
    await placesFree();
    const { sessionId } = await rawSession();
    expect(await activeProxySessions()).toBe(1);
    await placesFree();
    await expect(openRawRelay(notary, sessionId)).rejects.toThrow("refused the relay socket");
  });

  test("bytes either way keep a relay from idling, until the session's lifetime ends it", async () => {
    await placesFree();
    const before = await refusals("lifetime");
    // The lifetime runs from the session's creation.
    const asked = performance.now();
    const { sessionId, connection } = await rawSession();
    const relay = await openRawRelay(notary, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    // Well inside the idle limit, until the notary ends the session.
    const ticker = setInterval(() => relay.ws.readyState === WebSocket.OPEN && relay.send(Uint8Array.of(0)), IDLE_MS / 3);
    const closed = await relay.closed;
    clearInterval(ticker);
    expect(closed).toEqual({ code: 4000, reason: `session_timeout: the proxy session outlived its ${SESSION_MS / 1000} s` });
    expect(performance.now() - asked).toBeGreaterThanOrEqual(SESSION_MS - 5);
    await raw.closedConnections(connection + 1);
    expect(await refusals("lifetime")).toBe(before + 1);
    expect(await activeProxySessions()).toBe(0);
  });
});

describe("one relay, one attestation", () => {
  test("two relay sockets asked for one session at once: one opens, the other is refused at its upgrade; the one open relays", async () => {
    const { sessionId, connection } = await rawSession();
    // Both upgrades are on their way before either is answered.
    const url = `${notary.url.replace(/^http/, "ws")}/relay?sessionId=${sessionId}`;
    const asked = await Promise.allSettled([openUnreadWebSocket(url), openUnreadWebSocket(url)]);
    const opened = asked.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
    const refused = asked.flatMap((result) => (result.status === "rejected" ? [(result.reason as Error).message] : []));
    expect(refused).toEqual(["the server answered the upgrade with HTTP/1.1 404 Not Found"]);
    const hello = await clientHelloFor(TARGET_HOST);
    opened[0]!.send(hello);
    expect((await eventually(() => raw.connections()[connection]!.bytes, (bytes) => bytes.length >= hello.length, 5_000, { intervalMs: 5 })).length).toBe(hello.length);
    opened[0]!.close();
    await release(sessionId);
  });

  test("two attestations at once: the second is 409 session_taken; the first waits for the relay's end, then is judged", async () => {
    const { sessionId } = await rawSession();
    const relay = await openRawRelay(notary, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    const both = [postProxyAttestation(notary, sessionId, attestationBody()), postProxyAttestation(notary, sessionId, attestationBody())].map((answer) => answer.then(errorOf));
    expect(await Promise.race(both)).toEqual({ status: 409, code: "session_taken", message: "this session's attestation was already requested" });
    // Taken, the session is its attestation's: the idle limit passes without ending its relay. A control session,
    // made after the taken one's last byte (the raw target answers nothing), meets that limit later than it would:
    // once the control is ended by it, the limit has passed for the taken one too.
    const idleBefore = await refusals("idle");
    const control = await rawSession();
    const controlRelay = await openRawRelay(notary, control.sessionId);
    expect((await controlRelay.closed).reason).toStartWith("session_timeout: no byte passed the relay either way");
    expect(relay.ws.readyState).toBe(WebSocket.OPEN);
    expect(await refusals("idle")).toBe(idleBefore + 1);
    // The attestation goes on as soon as the relay socket closes, well before the grace for its close runs out (2 s).
    const closedAt = performance.now();
    relay.ws.close();
    const codes = (await Promise.all(both)).map((error) => error.code);
    expect(performance.now() - closedAt).toBeLessThan(1_000);
    // The session's one attestation ran, on a relay the target sent nothing through.
    expect(codes.sort()).toEqual(["session_taken", "transcript_invalid"]);
    // Taken, the session is gone.
    expect(await errorOf(await postProxyAttestation(notary, sessionId, attestationBody()))).toMatchObject({ status: 404, code: "not_found" });
  });
});

describe("a relay's end", () => {
  test("a target that ends its connection closes the relay normally, with no failure to report", async () => {
    const sessionId = await createProxySession(notary, TARGET_HOST, (closing.address() as { port: number }).port);
    const relay = await openRawRelay(notary, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    expect((await relay.closed).code).toBe(1000);
    await release(sessionId);
  });

  test("a notary that stops ends its sessions' relays and their connections to targets", async () => {
    const stopping = limitedNotary([raw.port], { concurrency: 2, maxPendingConnects: 2 });
    const connection = raw.connections().length;
    const sessionId = await createProxySession(stopping, TARGET_HOST, raw.port);
    const relay = await openRawRelay(stopping, sessionId);
    await stopping.stop(0);
    await relay.closed;
    await raw.closedConnections(connection + 1);
    expect(raw.connections()[connection]!.closed).toBe(true);
    expect(linesOf(sessionId)).toEqual([createdLine(sessionId), `proxy session ended sessionId=${sessionId} reason=the notary shut down`]);
  });
});

describe("the relay's byte limits", () => {
  test("the prover sends more than the limit: the relay ends saying why, the excess never reaches the target, the attestation is refused", async () => {
    const { sessionId, connection } = await rawSession();
    const relay = await openRawRelay(notary, sessionId);
    relay.send(await clientHelloFor(TARGET_HOST));
    for (let sent = 0; sent < RELAY_LIMIT; sent += 16 * 1024) relay.send(new Uint8Array(16 * 1024));
    expect(await relay.closed).toEqual({ code: 4000, reason: `session_failed: the prover sent more than this notary relays (${RELAY_LIMIT} bytes)` });
    expect(linesOf(sessionId)).toEqual([createdLine(sessionId), `proxy relay failed sessionId=${sessionId} error=the prover sent more than this notary relays (${RELAY_LIMIT} bytes)`]);
    await raw.closedConnections(connection + 1);
    expect(raw.connections()[connection]!.bytes.length).toBeLessThanOrEqual(RELAY_LIMIT);
    expect(await errorOf(await postProxyAttestation(notary, sessionId, attestationBody()))).toEqual({
      status: 500,
      code: "session_failed",
      message: `the prover sent more than this notary relays (${RELAY_LIMIT} bytes)`,
    });
  });
});

describe("what the routes say of themselves", () => {
  /** The error codes GET /openapi.json documents for an operation, by status. */
  async function documented(path: string): Promise<{ summary: string; codes: Record<string, string> }> {
    const document = (await (await fetch(`${notary.url}/openapi.json`)).json()) as {
      paths: Record<string, { post: { summary: string; responses: Record<string, { description: string }> } }>;
    };
    const { summary, responses } = document.paths[path]!.post;
    return { summary, codes: Object.fromEntries(Object.entries(responses).map(([status, { description }]) => [status, description])) };
  }

  test("the session route documents every refusal a target or the places cause, with its status", async () => {
    const { summary, codes } = await documented("/proxy-session");
    expect(summary).toBe("open a proxy-mode session: the notary connects to the target; its prover then relays through GET /relay?sessionId=");
    for (const [status, code] of [["503", "over_capacity"], ["403", "target_forbidden"], ["502", "target_unresolvable"], ["502", "target_unreachable"], ["504", "target_timeout"]]) {
      expect(codes[status!] ?? `nothing documented for ${status}`).toContain(code!);
    }
  });

  test("the attestation route documents its refusals: a late attestation, an untrusted server, a transcript that does not verify", async () => {
    const { codes } = await documented("/proxy-session/{id}/attestation");
    for (const [status, code] of [["422", "attestation_late"], ["422", "transcript_invalid"], ["502", "tls_untrusted"]]) {
      expect(codes[status!]).toContain(code!);
    }
  });

  test("a refused body is named as the mode's session or attestation request", async () => {
    expect(await errorOf(await fetch(`${notary.url}/proxy-session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }))).toMatchObject({
      status: 400,
      code: "invalid_body",
      message: expect.stringMatching(/^proxy session request: /),
    });
    const { sessionId } = await rawSession();
    expect(await errorOf(await postProxyAttestation(notary, sessionId, { requestId: "x" }))).toMatchObject({
      status: 400,
      code: "invalid_body",
      message: expect.stringMatching(/^proxy attestation request: /),
    });
    await release(sessionId);
  });
});
