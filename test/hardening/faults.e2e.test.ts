import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Server, TCPSocketListener } from "bun";
import { join } from "node:path";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { errorData, firstEvent, proofData } from "../../testkit/sse.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type RunningNotary, eventually, freePort, notaryConfig, notarySessions, startNotary, waitForLog } from "../../testkit/notary.ts";
import { isRunning } from "../../testkit/process.ts";
import type { EngineHostStatus } from "../../src/engine/host/engine-hosts.ts";

/**
 * Faults around real MPC sessions: a standalone `cli notary start` process, a `cli prover start` process
 * using it, and targets that refuse, hang, reset or cut a response short. Each case costs one MPC setup.
 *
 * Every test starts from the same state (`ready`): a notary that answers with no session open, and a prover
 * whose two engine hosts serve and hold nothing. Whatever a failed or timed-out test left behind (a stopped
 * notary, a prover ended by the runner) is replaced first, so one failure does not fail the tests after it.
 */
const KEY = "fault-key-6b5a4c3d2e1f";
const auth = { authorization: `Bearer ${KEY}` };
/** One MPC setup takes 10 s on idle cores and over a minute on two loaded ones; this is only a safety net. */
const MPC_MS = 300_000;

let notaryConfigPath: string;
let notary: RunningNotary;
let prover: RunningProver;
let target: Server<undefined>;
let cutShort: Server<undefined>;
let silent: TCPSocketListener;
let resetting: TCPSocketListener;
let refusingPort: number;

/** Accepts connections and then never says anything. */
const silentServer = () => Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
/** Cuts the connection as soon as the client speaks. */
const resettingServer = () => Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: (socket) => socket.terminate() } });
/** Sends a response's headers and part of its body, then breaks the connection. */
function cutShortServer(): Server<undefined> {
  const tls = tlsFixture();
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: tls.chainPem, key: tls.leafKeyPem },
    fetch: () =>
      new Response(
        new ReadableStream({
          async pull(controller) {
            controller.enqueue(new TextEncoder().encode('{"partial":"'.padEnd(200, "x")));
            await Bun.sleep(200);
            controller.error(new Error("cut short"));
          },
        }),
        { headers: { "content-type": "application/json", "content-length": "5000" } },
      ),
  });
}

const urlFor = (port: number, path = "/data") => `https://${TARGET_HOST}:${port}${path}`;

async function proxy(url: string, requestId = crypto.randomUUID(), init: RequestInit = {}) {
  const response = await fetch(`${prover.url}/proxy`, {
    ...init,
    headers: { "t-proxy-url": url, "t-request-id": requestId, ...auth, ...(init.headers as Record<string, string>) },
  });
  const text = await response.text();
  const code = response.ok ? undefined : (JSON.parse(text) as { error: { code: string } }).error.code;
  return { status: response.status, text, code, requestId, response };
}

const proofEvent = (requestId: string, ms = MPC_MS) => firstEvent(`${prover.url}/proof/${requestId}`, ms, { headers: auth });

type EngineHosts = { replaced: { hung: number; died: number }; hosts: EngineHostStatus[] };
const engineHosts = async (): Promise<EngineHosts> =>
  ((await (await fetch(`${prover.url}/pool`, { headers: auth })).json()) as { engineHosts: EngineHosts }).engineHosts;
/** On-demand MPC setups running now (the prover keeps no warm pool here). */
const setupsRunning = async () =>
  ((await (await fetch(`${prover.url}/pool`, { headers: auth })).json()) as { setups: { running: number } }).setups.running;
/** Whether the prover counts its notary as up (a notary found down is checked again with back-off). */
const notaryHealthy = async () =>
  ((await (await fetch(`${prover.url}/info`, { headers: auth })).json()) as { notaries: { healthy: boolean }[] }).notaries[0]!.healthy;
/** Both engine hosts serve and hold no session. */
const idle = (h: EngineHosts) => h.hosts.length === 2 && h.hosts.every((host) => host.sessions === 0 && !host.retiring);

/** The notary's open sessions, or undefined when it does not answer within a few seconds (stopped, ended). */
const notaryAnswers = (n: RunningNotary) =>
  fetch(`${n.url}/info`, { signal: AbortSignal.timeout(5_000) }).then(
    async (r) => ((await r.json()) as { activeSessions: number }).activeSessions,
    () => undefined,
  );
const proverAnswers = (p: RunningProver) =>
  fetch(`${p.url}/healthcheck`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status === 200, () => false);

async function restartNotary() {
  notary.process.kill("SIGKILL");
  await notary.process.exited;
  notary = await startNotary(notaryConfigPath);
}

const proverEnv = () => {
  const ports = [target.port!, cutShort.port!, silent.port, resetting.port, refusingPort];
  return {
    PROVER_NOTARY_URL: notary.url,
    PROVER_RESOLVE: ports.map((port) => `${TARGET_HOST}:${port}:127.0.0.1`).join(","),
    PROVER_RESPONSE_TIMEOUT: "3000ms",
    PROVER_CONNECT_TIMEOUT: "2000ms",
    PROVER_SHUTDOWN_GRACE: "120s",
    PROVER_API_KEYS: KEY,
    PROVER_POOL_SIZE: "0",
    // Smaller sessions set up faster; the test responses fit.
    PROVER_MAX_SENT_DATA: "512",
    PROVER_MAX_RECV_DATA: "1024",
    PROVER_ENGINE_HOSTS: "2",
    // An abandoned engine call gets 10 s to end before its host is replaced. Not less: on two loaded cores an
    // engine's compute step between socket reads can outlast 2 s, so a setup whose notary died ends that late.
    PROVER_ENGINE_HANG: "10s",
    // A subscriber to an id no call used is told so after this long; the SIGTERM test's waiting stream must
    // instead be ended by the shutdown, which on loaded cores comes more than the default 30 s after it opened.
    PROVER_UNKNOWN_REQUEST_TIMEOUT: "900s",
    // A setup whose MPC socket goes quiet both ways (BENCHMARKS.md, "Stalled setups") is set up again after this
    // long: short enough for that second setup to fit the SIGTERM case's grace. Healthy setups were quiet ≤ 5 s.
    PROVER_SETUP_STALL: "30s",
  };
};

/** A notary that answers with no session open, and a prover that serves with both engine hosts idle. */
async function ready() {
  if ((await notaryAnswers(notary)) !== 0) await restartNotary();
  let proverUp = prover.process.exitCode === null && (await proverAnswers(prover));
  if (proverUp && !idle(await eventually(engineHosts, idle, 30_000))) {
    prover.process.kill("SIGKILL");
    proverUp = false;
  }
  if (!proverUp) {
    prover.process.kill("SIGKILL");
    await prover.process.exited;
    prover = await startProver(SOURCE_CLI, target.port!, proverEnv());
  }
  // A notary the prover found down is checked again with back-off of up to 30 s.
  expect(await eventually(notaryHealthy, (healthy) => healthy, 40_000)).toBe(true);
}

/**
 * Waits until the MPC setup of the request just sent runs with the notary: the notary has created its session
 * (found in the notary's log after `logFrom`) and the prover's engine has connected to it (the notary counts it
 * running), while the prover still waits for that setup. Returns the engine host holding the session's prover.
 */
async function setupUnderWay(logFrom: number): Promise<{ pid: number }> {
  const [, sessionId] = await waitForLog(notary.process, () => notary.log().slice(logFrom), /session created .*?\bsessionId=(\S+)/, MPC_MS / 2);
  const running = () => fetch(`${notary.url}/session/${sessionId}`).then((r) => r.status);
  expect(await eventually(running, (status) => status === 200, MPC_MS / 2)).toBe(200);
  const busy = await eventually(async () => (await engineHosts()).hosts.find((h) => h.sessions === 1), (h) => h !== undefined, 10_000);
  expect(busy).toBeDefined();
  // Still in the setup: the fault that follows lands there, not in the exchange after it.
  expect(await setupsRunning()).toBe(1);
  return { pid: busy!.pid };
}

beforeAll(async () => {
  // The notary keeps its key across the restarts below, as an operator's does: the prover refuses a notary
  // that comes back with another key than the one it announced first.
  const keys = scratchDir("notary-key");
  expect((await runCli(SOURCE_CLI, ["notary", "keygen", "--out", keys])).exitCode).toBe(0);
  notaryConfigPath = notaryConfig(
    `host: 127.0.0.1\nport: ${freePort()}\nconcurrency: 4\nnotarization:\n  timeout: 300\n  private_key_path: ${join(keys, "notary.key")}\n`,
  );
  notary = await startNotary(notaryConfigPath);
  target = startTarget(tlsFixture());
  cutShort = cutShortServer();
  silent = silentServer();
  resetting = resettingServer();
  refusingPort = freePort();
  prover = await startProver(SOURCE_CLI, target.port!, proverEnv());
}, 90_000);

beforeEach(ready, 120_000);

afterAll(() => {
  prover?.process.kill("SIGKILL");
  notary?.process.kill("SIGKILL");
  target?.stop(true);
  cutShort?.stop(true);
  silent?.stop(true);
  resetting?.stop(true);
});

describe("target faults: a clear code, the same code on the proof stream, no session left behind", () => {
  test.each([
    ["refuses the connection", () => urlFor(refusingPort), { target_unreachable: /^the target refused the connection$/ }],
    ["accepts and never answers", () => urlFor(silent.port), { target_timeout: /^the target stopped answering$/ }],
    [
      "resets the connection",
      () => urlFor(resetting.port),
      {
        target_request_failed: /^the target closed the connection before the exchange was over|^the exchange with the target failed$/,
        target_unreachable: /^the target (refused the connection|could not be reached)$/,
      },
    ],
    ["closes mid-response", () => urlFor(cutShort.port!), { target_request_failed: /^the target closed the connection before the exchange was over/ }],
  ] as [string, () => string, Record<string, RegExp>][])(
    "the target %s",
    async (fault, url, messages) => {
      const requestId = crypto.randomUUID();
      const event = proofEvent(requestId);
      const logFrom = notary.log().length;
      const answer = await proxy(url(), requestId);
      // A refused connection is found by the pre-check's handshake: no MPC setup is spent on it.
      if (fault === "refuses the connection") expect(notary.log().slice(logFrom)).not.toContain("session created");
      expect(Object.keys(messages)).toContain(answer.code!);
      expect((JSON.parse(answer.text) as { error: { message: string } }).error.message).toMatch(messages[answer.code!]!);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(errorData(await event)).toMatchObject({ requestId, code: answer.code });
      expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
    },
    MPC_MS,
  );
});

describe("client drops", () => {
  test(
    "a /proxy call dropped midway still makes its proof for late subscribers; the prover's key never reaches the target",
    async () => {
      const requestId = crypto.randomUUID();
      const abort = new AbortController();
      const call = fetch(`${prover.url}/proxy`, {
        headers: { "t-proxy-url": urlFor(target.port!, "/echo"), "t-request-id": requestId, ...auth },
        signal: abort.signal,
      }).catch((error: unknown) => error);
      expect(await eventually(() => notarySessions(notary.url), (n) => n === 1, 30_000)).toBe(1);
      abort.abort();
      expect(await call).toBeInstanceOf(Error);
      const late = await proofEvent(requestId);
      const proof = JSON.parse(proofData(late).proofText) as { body: { transcript: { sent: { revealed: { data: string }[] } } } };
      const sent = proof.body.transcript.sent.revealed.map((r) => Buffer.from(r.data, "base64").toString("latin1")).join("");
      expect(sent).toContain("GET /echo");
      expect(sent).not.toContain(KEY);
      expect(sent.toLowerCase()).not.toContain("authorization");
      // Kept: a second late subscriber gets the same proof.
      expect((await proofEvent(requestId, 30_000)).data).toBe(late.data);
      expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
    },
    MPC_MS,
  );
});

describe("the notary dies mid-session", () => {
  test(
    "/proxy answers 503 notary_unavailable (Retry-After), subscribers get the error, and the prover keeps serving",
    async () => {
      const dying = notary;
      const before = await engineHosts();
      const retiredBefore = prover.log().split("engine host retired").length;
      const logFrom = dying.log().length;
      const requestId = crypto.randomUUID();
      const event = proofEvent(requestId);
      const call = proxy(urlFor(target.port!), requestId);
      await setupUnderWay(logFrom);
      dying.process.kill("SIGKILL");
      await dying.process.exited;
      const answer = await call;
      expect(answer).toMatchObject({ status: 503, code: "notary_unavailable" });
      expect(errorData(await event)).toMatchObject({ requestId, code: "notary_unavailable" });
      // Nothing is left behind. Usually the engine sees the socket close and ends the setup itself, freeing its
      // prover; on loaded cores it has also ended that call more than PROVER_ENGINE_HANG later (CI: 2 of 4
      // runs), and then its host is retired and replaced. Either way: both hosts serve, none holds a session.
      const hosts = await eventually(engineHosts, idle, 60_000);
      expect(hosts.hosts.map((h) => ({ sessions: h.sessions, retiring: h.retiring }))).toEqual([
        { sessions: 0, retiring: false },
        { sessions: 0, retiring: false },
      ]);
      expect(hosts.replaced.died).toBe(before.replaced.died);
      const replaced = hosts.replaced.hung - before.replaced.hung;
      expect(replaced).toBeLessThanOrEqual(1);
      // A replacement says why in the log; without one, the log has no such line.
      const retired = await eventually(() => prover.log().split("engine host retired").length, (n) => n === retiredBefore + replaced, 5_000);
      expect(retired).toBe(retiredBefore + replaced);
      // Still serving, and failing fast while the notary is gone.
      expect((await fetch(`${prover.url}/healthcheck`)).status).toBe(200);
      const meanwhile = await proxy(urlFor(target.port!));
      expect(meanwhile).toMatchObject({ status: 503, code: "notary_unavailable" });
    },
    MPC_MS,
  );

  test(
    "a notary that stops answering during setup (its sockets stay open): the engine never ends that setup, so its host is ended and replaced",
    async () => {
      const stopping = notary;
      const before = await engineHosts();
      const retiredBefore = prover.log().split("engine host retired").length;
      const logFrom = stopping.log().length;
      const call = proxy(urlFor(target.port!));
      try {
        const busy = await setupUnderWay(logFrom);
        // The setup has grown the engine's memory (or an earlier session had) before the notary stops.
        const grown = await eventually(
          async () => (await engineHosts()).hosts.find((h) => h.pid === busy.pid)?.memory.engineBytes ?? 0,
          (bytes) => bytes > 100 * 2 ** 20,
          MPC_MS / 2,
        );
        expect(grown).toBeGreaterThan(100 * 2 ** 20);
        expect(await setupsRunning()).toBe(1);
        stopping.process.kill("SIGSTOP");
        // Health checks find the notary gone; the session gives up on the engine's setup.
        expect(await call).toMatchObject({ status: 503, code: "notary_unavailable" });
        // The setup is still running after PROVER_ENGINE_HANG: the host is retired, ended and replaced.
        expect(await eventually(() => isRunning(busy.pid), (running) => !running, 60_000)).toBe(false);
        const after = await eventually(engineHosts, (h) => idle(h) && h.replaced.hung === before.replaced.hung + 1, 60_000);
        expect(after.replaced.hung).toBe(before.replaced.hung + 1);
        expect(after.hosts.map((h) => h.pid)).not.toContain(busy.pid);
        expect(idle(after)).toBe(true);
        // Its memory went with it: the replacement starts small.
        const replacement = after.hosts.find((h) => !before.hosts.some((b) => b.pid === h.pid))!;
        expect(replacement.memory.engineBytes).toBeLessThan(grown);
        const retired = await eventually(() => prover.log().split("engine host retired").length, (n) => n > retiredBefore, 5_000);
        expect(retired).toBe(retiredBefore + 1);
      } finally {
        stopping.process.kill("SIGKILL");
        await stopping.process.exited;
      }
    },
    MPC_MS,
  );

  test(
    "when the notary returns, proofs work again; SIGTERM then finishes the running proof, ends other streams and exits 0",
    async () => {
      // The notary goes, the prover sees it gone, and it comes back on the same address.
      notary.process.kill("SIGKILL");
      await notary.process.exited;
      expect(await eventually(notaryHealthy, (healthy) => !healthy, 30_000)).toBe(false);
      notary = await startNotary(notaryConfigPath);
      expect(await eventually(notaryHealthy, (healthy) => healthy, 40_000)).toBe(true);

      const ending = prover;
      const requestId = crypto.randomUUID();
      const waiting = crypto.randomUUID();
      const proofOfRunning = proofEvent(requestId);
      const otherStream = proofEvent(waiting);
      const call = proxy(urlFor(target.port!), requestId);
      expect(await eventually(() => notarySessions(notary.url), (n) => n === 1, 30_000)).toBe(1);
      ending.process.kill("SIGTERM");
      // Not accepting any more: refused, or 503 shutting_down while the listener closes.
      const health = () => fetch(`${ending.url}/healthcheck`).then((r) => r.status, () => "refused");
      expect(await eventually(health, (status) => status !== 200, 10_000)).not.toBe(200);
      const answer = await call;
      expect(answer.status).toBe(200);
      expect(answer.response.headers.get("t-proof-id")).toBe(requestId);
      expect(JSON.parse(proofData(await proofOfRunning).proofText).body.requestId).toBe(requestId);
      expect(errorData(await otherStream)).toMatchObject({ requestId: waiting, code: "shutting_down" });
      expect(await ending.process.exited).toBe(0);
      expect(await notarySessions(notary.url)).toBe(0);
    },
    MPC_MS,
  );
});
