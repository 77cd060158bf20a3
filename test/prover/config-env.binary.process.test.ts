import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { issueCertificate, issueServerCertificate, makeTestCa } from "../../src/engine/test-ca.ts";
import { useBuiltBinary } from "../../testkit/binary.ts";
import { tempDir } from "../../testkit/env.ts";
import { BINARY_CLI, startProver } from "../../testkit/prover.ts";

useBuiltBinary();

/**
 * `dist/cli prover start` refuses, before serving anything, a misspelt PROVER_* variable (exit 2, naming the
 * closest known one) and a test trust anchor that is not a usable test CA (exit 2), and still starts with the
 * PROVER_* variable the test suite itself reads. A prover that wrongly started is ended after a minute: the test
 * then fails on its exit code.
 */
async function startExpectingFailure(env: Record<string, string>): Promise<{ exitCode: number; stderr: string }> {
  const child = Bun.spawn([...BINARY_CLI, "prover", "start"], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PROVER_PORT: "0", PROVER_DATA_DIR: tempDir("env"), PROVER_POOL_SIZE: "0", ...env },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    timeout: 60_000,
  });
  const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited]);
  return { exitCode, stderr };
}

/** Exit 2 and one `error:` line, no stack. */
function expectConfigError(result: { exitCode: number; stderr: string }, line: RegExp): void {
  expect(result.stderr.split("\n").filter((l) => l.startsWith("error:"))).toEqual([expect.stringMatching(line)]);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.exitCode).toBe(2);
}

describe("prover settings at start (dist/cli)", () => {
  test("an unknown PROVER_* variable stops it, naming the closest known setting", async () => {
    expectConfigError(await startExpectingFailure({ PROVER_POOL_SIZ: "0" }), /^error: unknown setting PROVER_POOL_SIZ: did you mean PROVER_POOL_SIZE\?/);
    expectConfigError(await startExpectingFailure({ PROVER_ALOWED_PORTS: "443", PROVER_XYZ: "1" }), /^error: unknown setting PROVER_ALOWED_PORTS: did you mean PROVER_ALLOWED_PORTS\? \(and 1 more: PROVER_XYZ\)/);
  }, 120_000);

  test("the test suite's PROVER_TEST_PG_URL (and PROVER_LOG_LEVEL) are known: it starts", async () => {
    const prover = await startProver(BINARY_CLI, 443, { PROVER_TEST_PG_URL: "postgres://postgres@127.0.0.1:5432/test", PROVER_LOG_LEVEL: "debug" });
    expect(await prover.stop()).toBe(0);
    expect(prover.log()).toContain("prover listening");
  }, 120_000);

  test("a test trust anchor that is not a test CA stops it with exit 2: not PEM, a server certificate the CA issued, a non-CA with the anchor's subject", async () => {
    const dir = tempDir("anchor");
    const write = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
    const ca = makeTestCa();
    expectConfigError(await startExpectingFailure({ TLSN_TEST_TRUST_ANCHOR: write("junk.pem", "not a certificate\n") }), /^error: TLSN_TEST_TRUST_ANCHOR: not a PEM certificate/);
    // Its issuer is the anchor's Name, its subject is not: the engine would have trusted the server's own key.
    const leaf = issueServerCertificate(ca, ["target.test"]);
    expectConfigError(await startExpectingFailure({ TLSN_TEST_TRUST_ANCHOR: write("leaf.pem", leaf.pem) }), /^error: TLSN_TEST_TRUST_ANCHOR: the CA subject must be exactly/);
    const notCa = issueCertificate({ subject: "anchor" });
    expectConfigError(await startExpectingFailure({ TLSN_TEST_TRUST_ANCHOR: write("not-ca.pem", notCa.pem) }), /^error: TLSN_TEST_TRUST_ANCHOR: not a CA certificate/);
  }, 180_000);
});
