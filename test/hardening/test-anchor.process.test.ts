import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { notaryConfig } from "../../testkit/notary.ts";
import { SOURCE_CLI } from "../../testkit/prover.ts";

/**
 * A test anchor inherited from a shell makes no prover or notary that others can reach: `cli prover start` on
 * 0.0.0.0 and `cli notary start` on its default host (every address) stop at once with exit 2 and one line naming
 * the opt-in. A start that was not refused would listen: it is killed after 20 s and the test fails on its code.
 */
async function startRefused(args: string[], env: Record<string, string>): Promise<{ exitCode: number | null; stderr: string }> {
  const child = Bun.spawn([...SOURCE_CLI, ...args], { stdin: "ignore", stdout: "ignore", stderr: "pipe", env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env } });
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const stderr = await new Response(child.stderr).text();
  await child.exited;
  clearTimeout(timer);
  return { exitCode: child.signalCode ? null : child.exitCode, stderr };
}

describe("a test anchor from the environment on an exposed node", () => {
  const anchor = tlsFixture().caPath;
  test("cli prover start on 0.0.0.0 refuses it: exit 2, one line", async () => {
    const refused = await startRefused(["prover", "start"], { TLSN_TEST_TRUST_ANCHOR: anchor, PROVER_HOST: "0.0.0.0", PROVER_PORT: "0", PROVER_DATA_DIR: scratchDir("anchor") });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^error: TLSN_TEST_TRUST_ANCHOR is set but this prover listens on 0\.0\.0\.0 \(PROVER_HOST\).*TLSN_TEST_TRUST_ANCHOR_EXPOSED=1/)]);
  }, 30_000);

  test("cli notary start on its default host refuses it: exit 2, one line", async () => {
    const config = notaryConfig("port: 0\nnotarization:\n  private_key_path: null\n");
    const refused = await startRefused(["notary", "start", "--config", config], { TLSN_TEST_TRUST_ANCHOR: anchor });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^error: TLSN_TEST_TRUST_ANCHOR is set but this notary listens on 0\.0\.0\.0 \(the config's host\)/)]);
  }, 30_000);
});

describe("a test anchor that is no test CA", () => {
  test("cli notary start refuses it before it listens, though its engine starts only at the first MPC session: exit 2, one line", async () => {
    const junk = join(scratchDir("anchor"), "junk.pem");
    writeFileSync(junk, "not a certificate\n");
    const config = notaryConfig("host: 127.0.0.1\nport: 0\nnotarization:\n  private_key_path: null\n");
    const refused = await startRefused(["notary", "start", "--config", config], { TLSN_TEST_TRUST_ANCHOR: junk });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^error: TLSN_TEST_TRUST_ANCHOR: not a PEM certificate/)]);
  }, 30_000);
});
