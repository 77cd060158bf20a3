/**
 * One prover per port and per data folder, through `cli prover start`: a second prover on a busy prover's folder, or
 * on its port, stops (exit 2, one line naming what holds it) before it touches the folder, and the first prover's
 * proof in flight meanwhile is delivered and verifies. Proxy mode, against a target that holds its answer until the
 * test releases it: the proof is in flight for as long as the test needs.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LOCK_FILE } from "../../src/core/folder-lock.ts";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../testkit/scripted-target.ts";
import { openStream, proofData } from "../../testkit/sse.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/wait.ts";

const ANSWER = '{"balance":42}';
let target: ScriptedTarget;
let prover: RunningProver;
/** Request heads the target read. */
const seen: string[] = [];

beforeAll(async () => {
  target = await startScriptedTarget(tlsFixture(), { version: "TLSv1.3" }, async ({ socket, request, released }) => {
    seen.push(request);
    await released;
    socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${ANSWER.length}\r\n\r\n${ANSWER}`);
  });
  prover = await startProver(SOURCE_CLI, target.port, { PROVER_PROOF_MODE: "proxy" });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  target?.stop();
});

/** `cli prover start` run to its end with these settings. */
const secondProver = (env: Record<string, string>) => runCli(SOURCE_CLI, ["prover", "start"], undefined, { PROVER_POOL_SIZE: "0", ...env });

test("a second prover on a busy prover's folder or port exits 2 before touching the folder; the first one's proof in flight is delivered and verifies", async () => {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${prover.url}/proof/${requestId}`, 60_000);
  const answer = fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/balance`, "T-REQUEST-ID": requestId } });
  // The exchange is under way: the target holds the request, unanswered.
  expect(await eventually(() => seen.length, (n) => n === 1, 30_000)).toBe(1);

  const sameFolder = await secondProver({ PROVER_PORT: "0", PROVER_DATA_DIR: prover.dataDir });
  expect(sameFolder.exitCode).toBe(2);
  const lines = sameFolder.stderr.trim().split("\n");
  expect(lines.at(-1)).toContain(`the data folder ${prover.dataDir} is in use by process ${prover.process.pid}`);
  expect(lines.at(-1)).toContain(join(prover.dataDir, LOCK_FILE));
  expect(sameFolder.stderr).not.toContain("settled as failed");

  const folder = join(scratchDir("second-prover"), "data");
  const samePort = await secondProver({ PROVER_PORT: String(new URL(prover.url).port), PROVER_DATA_DIR: folder });
  expect(samePort.exitCode).toBe(2);
  expect(samePort.stderr.trim().split("\n").at(-1)).toContain("the port is already in use");
  expect(existsSync(folder)).toBe(false);

  target.release();
  const answered = await answer;
  // A failure shows what the prover answered and logged.
  const tail = () => prover.log().trimEnd().split("\n").slice(-15).join("\n");
  expect(answered.status, `${answered.status === 200 ? "" : await answered.clone().text()}\n${tail()}`).toBe(200);
  const [event] = await stream.events;
  const { proofText } = proofData(event!);
  expect(JSON.parse(proofText).body.requestId).toBe(requestId);
  const proofPath = join(scratchDir("second-prover"), "proof.json");
  writeFileSync(proofPath, proofText);
  const verified = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", proofPath, "--request-id", requestId]);
  expect(verified.exitCode).toBe(0);
  expect(prover.log()).not.toContain("a proof was made for an id already settled");
}, 120_000);

test("a stopped prover leaves its folder free; a lock whose process is gone is taken over", async () => {
  const dataDir = prover.dataDir;
  expect(await prover.stop()).toBe(0);
  expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  // What a killed prover leaves: a lock naming a process that no longer runs.
  const gone = Bun.spawn(["true"]);
  await gone.exited;
  writeFileSync(join(dataDir, LOCK_FILE), `${gone.pid}\n`);
  prover = await startProver(SOURCE_CLI, target.port, { PROVER_PROOF_MODE: "proxy", PROVER_DATA_DIR: dataDir });
  const info = await fetch(`${prover.url}/healthcheck`);
  expect(info.status).toBe(200);
}, 120_000);
