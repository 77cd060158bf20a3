/**
 * "Prove your own API in five minutes" as a new user runs it (README): `cli testca --serve` makes a test CA, serves a
 * small JSON API with its certificate and prints what to run; the printed prover command, curl in proxy mode,
 * `cli prove` in MPC mode and `cli verify` run as printed, in a shell, each in turn. One MPC session.
 */
import { afterAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { tempDir } from "../../testkit/env.ts";
import { freePort } from "../../testkit/notary.ts";
import { SOURCE_CLI, collectText } from "../../testkit/prover.ts";
import { waitUntil } from "../../testkit/wait.ts";

const MPC_MS = 240_000;
const running: Subprocess[] = [];
afterAll(() => {
  for (const child of running) child.kill("SIGTERM");
});

test("testca --serve, then its printed commands as printed: a proxy-mode answer by curl, an MPC proof by cli prove, cli verify", async () => {
  const dir = tempDir("own-api");
  const proverPort = freePort();
  // What a user's shell holds: a home of its own (the prover's default data folder under it) and the prover's port.
  // Small MPC sessions, as a warm-up would size them: the first one is set up on demand.
  const env = { PATH: process.env.PATH ?? "", HOME: dir, PROVER_PORT: String(proverPort), PROVER_MAX_SENT_DATA: "1024", PROVER_MAX_RECV_DATA: "2048" };
  const serving = Bun.spawn([...SOURCE_CLI, "testca", "--out", "testca", "--name", "api.local.test", "--port", String(freePort()), "--serve"], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
  running.push(serving);
  const printed = collectText(serving.stdout);
  await waitUntil("the API to serve", printed, (text) => text.includes("# Serving a JSON API"), 30_000, { context: printed });
  const commands = printed().split("\n").filter((line) => line !== "" && !line.startsWith("#"));
  expect(commands).toHaveLength(4);
  const [proverLine, curlLine, proveLine, verifyLine] = commands as [string, string, string, string];
  expect(proverLine).toEndWith(" prover start");

  const prover = Bun.spawn(["sh", "-c", `exec ${proverLine}`], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
  running.push(prover);
  const log = collectText(prover.stderr);
  await waitUntil("the prover to listen", log, (text) => text.includes("prover listening"), 60_000, { context: log });

  const shell = async (line: string) => {
    const child = Bun.spawn(["sh", "-c", line], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    return { stdout, stderr, exitCode };
  };
  const answered = await shell(curlLine);
  expect(answered.exitCode).toBe(0);
  const [answer, ...event] = answered.stdout.split("\n");
  expect(JSON.parse(answer!)).toMatchObject({ user: 42, name: "alice", balance: "1234.50" });
  // The proof event: the notary's key, then the proof, its balance hidden and its credential too.
  const proofLine = event.find((line) => line.startsWith('data: |{"version":"tlsproof/1"'));
  expect(proofLine).toBeDefined();
  expect(proofLine).toContain('"mode":"proxy"');
  expect(proofLine).not.toContain("1234.50");
  expect(proofLine).not.toContain("demo-token-not-a-secret");

  const proved = await shell(proveLine);
  expect(proved.exitCode).toBe(0);
  expect(JSON.parse(proved.stdout)).toMatchObject({ pair: "ETH-EUR" });
  const verified = await shell(verifyLine);
  expect(verified.exitCode).toBe(0);
  expect(verified.stdout).toContain("Proof valid");
  expect(verified.stdout).toContain("Proof mode:   mpc");
  expect(verified.stdout).toContain("GET /v1/price?pair=ETH-EUR HTTP/1.1");
  expect(readFileSync(join(dir, "proof.json"), "utf8")).toStartWith('{"version":"tlsproof/1"');
}, MPC_MS);
