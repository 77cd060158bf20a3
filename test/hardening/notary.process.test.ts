import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TCPSocketListener } from "bun";
import { utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SOURCE_CLI } from "../../testkit/prover.ts";
import { type RunningNotary, eventually, notaryConfig, notarySessions, startNotary } from "../../testkit/notary.ts";

/** A standalone `cli notary start` process: whitelist, concurrency, session timeout, SIGTERM. No MPC session runs. */
const ALICE = "alice-key-3f2e1d0c";
const BOB = "bob-key-9a8b7c6d";
const header = '"Name","ApiKey","CreatedAt"\n';
const row = (name: string, key: string) => `"${name}","${key}","2026-01-01T00:00:00Z"\n`;

let notary: RunningNotary;
let whitelistPath: string;

beforeAll(async () => {
  const configPath = notaryConfig(
    ["host: 127.0.0.1", "port: 0", "concurrency: 2", "notarization:", "  timeout: 1", "auth:", "  enabled: true", "  whitelist: keys.csv", ""].join("\n"),
    { "keys.csv": header + row("alice", ALICE) },
  );
  whitelistPath = join(dirname(configPath), "keys.csv");
  notary = await startNotary(configPath);
}, 60_000);

afterAll(() => {
  notary?.process.kill("SIGKILL");
});

const openSession = (key?: string) =>
  fetch(`${notary.url}/session`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ clientType: "Websocket", maxSentData: 1024, maxRecvData: 2048 }),
  });

/** Rewrites the whitelist with a new modification time, as an operator's edit would. */
function rewriteWhitelist(text: string, secondsAhead: number) {
  writeFileSync(whitelistPath, text);
  const when = new Date(Date.now() + secondsAhead * 1000);
  utimesSync(whitelistPath, when, when);
}

describe("notary whitelist", () => {
  test("a missing or unlisted key is 401, a listed key opens a session", async () => {
    expect((await openSession()).status).toBe(401);
    const wrong = await openSession(BOB);
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    const ok = await openSession(ALICE);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { sessionId: string }).sessionId).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("an edited whitelist applies without a restart; a broken edit keeps the last good list", async () => {
    expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 5_000)).toBe(0);
    rewriteWhitelist(header + row("bob", BOB), 5);
    expect((await openSession(BOB)).status).toBe(200);
    expect((await openSession(ALICE)).status).toBe(401);
    rewriteWhitelist('"no","header"\n', 10);
    expect((await openSession(BOB)).status).toBe(200);
    rewriteWhitelist(header + row("alice", ALICE) + row("bob", BOB), 15);
  });
});

describe("notary limits", () => {
  test("beyond `concurrency` sessions: 503 over_capacity with Retry-After; `timeout` frees them", async () => {
    expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 5_000)).toBe(0);
    // Alice is listed whatever the whitelist test before this one left (it ends with Alice and Bob).
    expect((await openSession(ALICE)).status).toBe(200);
    expect((await openSession(ALICE)).status).toBe(200);
    expect(await notarySessions(notary.url)).toBe(2);
    const third = await openSession(ALICE);
    expect(third.status).toBe(503);
    expect(third.headers.get("retry-after")).not.toBeNull();
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe("over_capacity");
    // notarization.timeout is 1 s: unused sessions end on their own.
    expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 5_000)).toBe(0);
    expect((await openSession(ALICE)).status).toBe(200);
  });
});

describe("notary SIGTERM", () => {
  test("refuses new sessions during the grace period, then exits 0", async () => {
    const configPath = notaryConfig(["host: 127.0.0.1", "port: 0", "notarization:", "  timeout: 60", ""].join("\n"));
    const own = await startNotary(configPath, { NOTARY_SHUTDOWN_GRACE_S: "2" });
    const open = () =>
      fetch(`${own.url}/session`, { method: "POST", body: JSON.stringify({ maxSentData: 1024, maxRecvData: 2048 }), headers: { "content-type": "application/json" } });
    expect((await open()).status).toBe(200);
    const started = Date.now();
    own.process.kill("SIGTERM");
    // The signal is handled once the notary says so; only then must it refuse.
    expect(await eventually(() => own.log().includes("shutting down"), Boolean, 10_000)).toBe(true);
    const during = await open();
    expect(during.status).toBe(503);
    expect(((await during.json()) as { error: { code: string } }).error.code).toBe("shutting_down");
    expect(await own.process.exited).toBe(0);
    // It waited for the open session up to the grace period, and no longer.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(own.log()).toContain("shutting down");
  }, 30_000);
});

/** Runs the command line with its own environment; returns exit code and output. */
async function run(args: string[], env: Record<string, string> = {}) {
  const child = Bun.spawn([...SOURCE_CLI, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  // Read to its end: the last lines may arrive after the exit is seen.
  const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return { exitCode, stderr };
}

/** One clear line: `error: …`, no stack trace. */
function expectCleanConfigError(result: { exitCode: number; stderr: string }, mentions: string) {
  expect(result.exitCode).toBe(2);
  const errorLines = result.stderr.split("\n").filter((l) => l.startsWith("error:"));
  expect(errorLines).toHaveLength(1);
  expect(errorLines[0]).toContain(mentions);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

describe("configuration errors exit 2 with one line", () => {
  let busy: TCPSocketListener;
  beforeAll(() => {
    busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  });
  afterAll(() => busy.stop(true));

  test("notary: bad YAML", async () => {
    expectCleanConfigError(await run(["notary", "start", "--config", notaryConfig("port: [1,\n  host: :\n")]), "not valid YAML");
  });
  test("notary: unknown key and wrong type", async () => {
    expectCleanConfigError(await run(["notary", "start", "--config", notaryConfig("prot: 7047\n")]), "prot");
    expectCleanConfigError(await run(["notary", "start", "--config", notaryConfig("port: seven\n")]), "port");
  });
  test("notary: missing config, key and whitelist files", async () => {
    expectCleanConfigError(await run(["notary", "start", "--config", "/nonexistent/notary.yaml"]), "/nonexistent/notary.yaml");
    const noKey = notaryConfig("notarization:\n  private_key_path: missing.key\n");
    expectCleanConfigError(await run(["notary", "start", "--config", noKey]), "missing.key");
    const noList = notaryConfig("auth:\n  enabled: true\n  whitelist: nowhere.csv\n");
    expectCleanConfigError(await run(["notary", "start", "--config", noList]), "nowhere.csv");
  });
  test("notary: bad NOTARY_* variables and connect_timeout", async () => {
    const config = notaryConfig("host: 127.0.0.1\nport: 0\n");
    expectCleanConfigError(await run(["notary", "start", "--config", config], { NOTARY_THREADS: "many" }), "NOTARY_THREADS");
    expectCleanConfigError(await run(["notary", "start", "--config", config], { NOTARY_SHUTDOWN_GRACE_S: "-1" }), "NOTARY_SHUTDOWN_GRACE_S");
    expectCleanConfigError(await run(["notary", "start", "--config", notaryConfig("notarization:\n  connect_timeout: soon\n")]), "connect_timeout");
  });
  test("notary: port in use", async () => {
    const config = notaryConfig(`host: 127.0.0.1\nport: ${busy.port}\n`);
    expectCleanConfigError(await run(["notary", "start", "--config", config]), "in use");
  }, 30_000);
  test("prover: bad environment variables", async () => {
    expectCleanConfigError(await run(["prover", "start"], { PROVER_PORT: "eighty" }), "PROVER_PORT");
    expectCleanConfigError(await run(["prover", "start"], { PROVER_MAX_SESSIONS: "0" }), "PROVER_MAX_SESSIONS");
    expectCleanConfigError(await run(["prover", "start"], { PROVER_RESPONSE_TIMEOUT: "-5s" }), "PROVER_RESPONSE_TIMEOUT");
    expectCleanConfigError(await run(["prover", "start"], { PROVER_ALLOW_PRIVATE_TARGETS: "yes" }), "PROVER_ALLOW_PRIVATE_TARGETS");
    expectCleanConfigError(await run(["prover", "start"], { PROVER_RESOLVE: "nonsense" }), "PROVER_RESOLVE");
    expectCleanConfigError(await run(["prover", "start"], { PROVER_ALLOWED_PORTS: "https" }), "PROVER_ALLOWED_PORTS");
    expectCleanConfigError(await run(["prover", "start"], { LOG_FORMAT: "xml" }), "LOG_FORMAT");
    // Above what the engine hosts hold of the smallest class beside a live session of the largest.
    expectCleanConfigError(await run(["prover", "start"], { PROVER_POOL_SIZE: "64" }), "PROVER_POOL_SIZE must be at most");
  });
  test("prover: unreadable test trust anchor and port in use", async () => {
    expectCleanConfigError(await run(["prover", "start"], { TLSN_TEST_TRUST_ANCHOR: "/nonexistent/ca.pem" }), "TLSN_TEST_TRUST_ANCHOR");
    const dataDir = notaryConfig("").replace(/notary\.yaml$/, "data");
    const inUse = await run(["prover", "start"], { PROVER_PORT: String(busy.port), PROVER_DATA_DIR: dataDir, PROVER_POOL_SIZE: "0" });
    expectCleanConfigError(inUse, "in use");
    // A setting under its former name is read, and said deprecated once, at start (here before the port refuses).
    const former = await run(["prover", "start"], { PROVER_PORT: String(busy.port), PROVER_DATA_DIR: dataDir, PROVER_POOL_SIZE: "0", PROVER_IDLE_TIMEOUT_S: "7" });
    expectCleanConfigError(former, "in use");
    expect(former.stderr.split("\n").filter((line) => line.includes("deprecated"))).toEqual([
      expect.stringContaining("PROVER_IDLE_TIMEOUT_S is deprecated and will go: set PROVER_IDLE_TIMEOUT=7s instead"),
    ]);
  }, 30_000);
});
