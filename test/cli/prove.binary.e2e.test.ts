import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { useBuiltBinary } from "../../testkit/binary.ts";
import { tempDir, tlsFixture } from "../../testkit/env.ts";
import { BINARY_CLI, type RunningProver, runCli, startProver } from "../../testkit/prover.ts";
import { SECRET_VALUE, startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { eventually, waitUntil } from "../../testkit/wait.ts";

useBuiltBinary();

/**
 * `dist/cli prove` against a real prover process (embedded notary) and a local TLS target, in shell scripts as a
 * user writes them: proofs in proxy mode (the CLI is the subject, not MPC), refusals, usage errors, a target's 503, the
 * progress line on a terminal only. And the prover's log when a warm session it no longer needs is released (one MPC
 * setup: the engine's log is the subject there).
 */
const CLI = BINARY_CLI[0]!;
const HEADER_SECRET = "hdr-secret-5c1b9e-do-not-print";
const MPC_MS = 240_000;

let target: Server<undefined>;
let prover: RunningProver;
let work: string;

beforeAll(async () => {
  work = tempDir("cli-prove");
  target = startTarget(tlsFixture());
  prover = await startProver(BINARY_CLI, target.port!, { PROVER_LOG_LEVEL: "debug" });
}, 60_000);

afterAll(async () => {
  const exitCode = await prover?.stop();
  target?.stop(true);
  expect(exitCode).toBe(0);
}, 60_000);

const url = (path: string) => `https://${TARGET_HOST}:${target.port}${path}`;
/** The prover and its key; its proofs are made under the test CA, accepted on purpose. */
const base = () => ["--allow-test-anchor", "--prover", prover.url, "--notary-pub-key", prover.notaryPubPath];

/** A shell script run with `cli` as $CLI, $P as the prover and $K as its notary key; in `work`. */
async function script(text: string): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(["sh", "-c", `set -e\n${text}`], {
    cwd: work,
    env: { PATH: process.env.PATH ?? "", CLI, P: prover.url, K: prover.notaryPubPath, T: url("") },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { exitCode, stdout, stderr };
}

describe("cli prove (dist/cli)", () => {
  test("proxy mode in a script: the answer on stdout, nothing on stderr into a pipe, then cli verify passes with the URL", async () => {
    const run = await script(`
      "$CLI" prove --allow-test-anchor --prover "$P" --notary-pub-key "$K" --url "$T/data" --mode proxy --header "x-api-key: ${HEADER_SECRET}" --redact req:header:x-api-key,res:body:secret --out proxy.json > answer.json
      "$CLI" verify --allow-test-anchor --notary-pub-key "$K" --proof proxy.json --server-name ${TARGET_HOST} --method GET --url "$T/data"`);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(join(work, "answer.json"), "utf8")).secret).toBe(SECRET_VALUE);
    expect(run.stdout).toContain("Proof mode:   proxy");
    // TLS 1.3: the request is proven, the header's value kept from the notary in an epoch of its own.
    expect(run.stdout).toContain(`Request:      revealed: GET /data HTTP/1.1 (Host: ${TARGET_HOST}:${target.port})`);
    expect(run.stdout).toContain(`x-api-key: ${"█".repeat(HEADER_SECRET.length)}`);
    expect(run.stdout).toContain(`"secret":${"█".repeat(SECRET_VALUE.length + 2)}`);
    const proof = readFileSync(join(work, "proxy.json"), "utf8");
    expect(proof).not.toContain(HEADER_SECRET);
    expect(proof).not.toContain(SECRET_VALUE);
  }, 60_000);

  test("a POST with --data @file, its request revealed in proxy mode and a part of it hidden", async () => {
    const run = await script(`
      printf '%s' '{"card":"4111-2222","amount":12}' > body.json
      "$CLI" prove --allow-test-anchor --prover "$P" --notary-pub-key "$K" --url "$T/echo" --mode proxy --reveal request --method POST --data @body.json \
        --redact req:body:card --out post.json > echoed.json
      "$CLI" verify --allow-test-anchor --notary-pub-key "$K" --proof post.json`);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const echoed = JSON.parse(readFileSync(join(work, "echoed.json"), "utf8")) as { method: string; body: string };
    expect(echoed.method).toBe("POST");
    expect(JSON.parse(echoed.body)).toEqual({ amount: 12, card: "4111-2222" });
    expect(run.stdout).toContain("POST /echo HTTP/1.1");
    expect(run.stdout).toContain(`"card":${"█".repeat("4111-2222".length + 2)}`);
    expect(readFileSync(join(work, "post.json"), "utf8")).not.toContain("4111-2222");
  }, 60_000);

  // The CLI is the subject here, not MPC: `cli prove --mode mpc` is the own-API test's (test/cli/own-api.e2e.test.ts),
  // an MPC proof from this binary the demo's (test/cli/demo.binary.e2e.test.ts).
  test("--answer in a script: the answer to its file, not stdout; the header hidden; cli verify passes", async () => {
    const run = await script(`
      "$CLI" prove --allow-test-anchor --prover "$P" --notary-pub-key "$K" --url "$T/data?view=full" --mode proxy --header "x-api-key: ${HEADER_SECRET}" \\
        --redact req:header:x-api-key --redact res:body:secret --answer answer-file.json --out answered.json > prove-stdout.txt
      "$CLI" verify --allow-test-anchor --notary-pub-key "$K" --proof answered.json --server-name ${TARGET_HOST}`);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(join(work, "answer-file.json"), "utf8")).user.name).toBe("alice");
    // The answer went to its file, not to prove's stdout.
    expect(readFileSync(join(work, "prove-stdout.txt"), "utf8")).not.toContain("alice");
    expect(run.stdout).toContain("Proof mode:   proxy");
    expect(run.stdout).toContain("GET /data?view=full HTTP/1.1");
    expect(run.stdout).toContain(`x-api-key: ${"█".repeat(HEADER_SECRET.length)}`);
    expect(run.stdout).not.toContain(HEADER_SECRET);
    expect(readFileSync(join(work, "answered.json"), "utf8")).not.toContain(HEADER_SECRET);
  }, 60_000);

  test("a request the prover refuses exits 1 with its code and message on one line, and writes no proof", async () => {
    const refused = await runCli(BINARY_CLI, ["prove", ...base(), "--url", url("/data?user=s3cret"), "--mode", "proxy", "--redact", "res:query:user", "--out", join(work, "refused.json")]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/^error: invalid_redaction: the request hides bytes before the end of its Host header .*\n$/);
    expect(refused.stdout).toBe("");
    expect(await Bun.file(join(work, "refused.json")).exists()).toBe(false);
  }, 30_000);

  test("a target's own 503 is its answer, not the prover's: printed once, exit 1 target_request_failed, not retried", async () => {
    const answered = () => prover.log().split("\n").filter((line) => line.includes("target answered") && line.includes("status=503")).length;
    const before = answered();
    const failed = await runCli(BINARY_CLI, ["prove", ...base(), "--url", url("/status/503"), "--mode", "proxy", "--out", join(work, "503.json")]);
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toStartWith("error: target_request_failed: ");
    // In the user's own words: the flag that asks for a proof of such an answer, not the header it sets.
    expect(failed.stderr).toContain("no proof is made without --prove-failed");
    expect(failed.stderr).not.toContain("T-PROVE-FAILED-REQ");
    expect(failed.stdout).toBe('{"status":503}');
    expect(answered()).toBe(before + 1);
  }, 30_000);

  test("usage errors exit 2 before anything is sent, naming a bad --header by position, never printing its value", async () => {
    // Nothing listens on port 1: a call that reached the network would be a network_error, exit 1.
    const offline = ["--prover", "http://127.0.0.1:1", "--notary-pub-key", prover.notaryPubPath, "--url", url("/data"), "--out", join(work, "never.json")];
    const cases: [string[], Record<string, string>, string][] = [
      [[...offline, "--header", "x-ok: 1", "--header", `no colon ${HEADER_SECRET}`], {}, 'error: --header 2 is not "Name: value"'],
      [[...offline, "--data", `{"card": ${HEADER_SECRET}`], {}, "error: --data must be JSON"],
      [[...offline, "--redact", "res:nothing:x"], {}, "error: --redact entry 1"],
      [[...offline, "--api-key-env", "TLSPROOF_TEST_UNSET_KEY"], {}, "error: --api-key-env: the environment variable TLSPROOF_TEST_UNSET_KEY is not set"],
      [[...offline, "--reveal", "request"], {}, "error: --reveal is for --mode proxy"],
      [[...offline, "--mode", "proxy", "--reveal", "all"], {}, "error: --reveal must be none or request"],
      [[...offline, "--method", "PATCH"], {}, "error: --method must be one of GET, POST, PUT, DELETE"],
      [[...offline.slice(0, -2), "--out", join(work, "no-such-folder", "p.json")], {}, "error: --out: the folder"],
      [["--prover", "http://127.0.0.1:1", "--notary-pub-key", prover.notaryPubPath, "--url", "http://plain.test/", "--out", "p.json"], {}, "error: --url must be an https:// URL"],
    ];
    for (const [args, env, message] of cases) {
      const result = await runCli(BINARY_CLI, ["prove", ...args], undefined, env);
      expect(result.stderr).toStartWith(message);
      expect(result.stderr).not.toContain(HEADER_SECRET);
      expect(result.exitCode).toBe(2);
    }
    const missing = await runCli(BINARY_CLI, ["prove", "--prover", prover.url, "--url", url("/data")]);
    expect(missing.exitCode).toBe(2);
  }, 60_000);

  test("on a terminal a progress line is drawn and replaced by the result line", async () => {
    const command = [CLI, "prove", ...base(), "--url", url("/data"), "--mode", "proxy", "--answer", join(work, "tty-answer.json"), "--out", join(work, "tty.json")]
      .map((word) => `'${word}'`)
      .join(" ");
    const terminal = Bun.spawn(["script", "-qec", command, "/dev/null"], { stdout: "pipe", stderr: "pipe", env: { PATH: process.env.PATH ?? "", TERM: "xterm" } });
    const [output, exitCode] = await Promise.all([new Response(terminal.stdout).text(), terminal.exited]);
    expect(exitCode).toBe(0);
    expect(output).toContain("\r\x1b[2Kproving (proxy): waiting for the target's answer… ");
    expect(output).toMatch(/proof [0-9a-f-]{36} \(proxy\) verified and written to .*tty\.json/);
  }, 30_000);

  test("a released warm session: the engine's lost connection is logged at debug, no ERROR line", async () => {
    const prepared = await fetch(`${prover.url}/prepare`, { headers: { "T-PREPARE": "1", "T-PROXY-URL": url("/data") } });
    expect(prepared.status).toBe(200);
    const pools = async () => ((await (await fetch(`${prover.url}/pools`)).json()) as { pools: { host: string; ready: number }[] }).pools;
    await waitUntil("a warm session", pools, (list) => list.some((p) => p.host === TARGET_HOST && p.ready === 1), MPC_MS, { intervalMs: 500, context: () => prover.log().slice(-3000) });
    const logBefore = prover.log().length;
    const dropped = await fetch(`${prover.url}/pool/${TARGET_HOST}`, { method: "DELETE" });
    expect(((await dropped.json()) as { closed: number }).closed).toBe(1);
    const after = await eventually(() => prover.log().slice(logBefore), (log) => log.includes("engine: connection closed after a release"), 60_000);
    expect(after).toContain("DEBUG engine: connection closed after a release");
    expect(after).toContain("released by the prover");
    expect(after.split("\n").filter((line) => /\bERROR\b/.test(line))).toEqual([]);
  }, MPC_MS);
});
