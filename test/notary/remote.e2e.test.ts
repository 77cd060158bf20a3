import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type RunningNotary, eventually, notarySessions, startKeyedNotary } from "../../testkit/notary.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { proveData, verifyWithCli } from "../../testkit/prove.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";

/**
 * A prover and a standalone notary with its whitelist on, as two real processes, speaking the notary protocol
 * (src/protocol/notary.ts) over HTTP: every session route carries the prover's key, one real MPC session makes
 * a proof that verifies against the notary's key, and the notary's place is freed afterwards.
 */
const KEY = "remote-prover-key-0a1b2c";
let notary: RunningNotary;
let notaryPubPath: string;
let prover: RunningProver;
let target: Server<undefined>;

beforeAll(async () => {
  const keyed = await startKeyedNotary(KEY, ["host: 127.0.0.1", "port: 0", "notarization:", "  max_sent_data: 1024", "  max_recv_data: 2048", "  private_key_path: notary.key"]);
  notary = keyed.notary;
  notaryPubPath = keyed.pubPath;
  target = startTarget(tlsFixture());
  prover = await startProver(SOURCE_CLI, target.port!, { PROVER_NOTARY_URL: notary.url, PROVER_NOTARY_API_KEY: KEY });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  notary?.process.kill("SIGKILL");
  target?.stop(true);
}, 120_000);

describe("prover and remote notary with a whitelist", () => {
  test("a proof made over the protocol verifies against the notary's key; the notary frees its place", async () => {
    const proved = await proveData(prover.url, target.port!);
    expect(proved.status).toBe(200);
    const verified = await verifyWithCli(proved.proof!.proofText, notaryPubPath);
    expect(verified.exitCode).toBe(0);
    const report = JSON.parse(verified.stdout) as { requestId: string; evm: { address: string } | null };
    expect(report.requestId).toBe(proved.requestId);
    // A remote secp256k1 notary adds the EVM attestation too, under the address both /info routes publish.
    const notaryInfo = (await (await fetch(`${notary.url}/info`)).json()) as { ethereumAddress: string };
    const proverInfo = (await (await fetch(`${prover.url}/info`)).json()) as { notary: { ethereumAddress: string } };
    expect(notaryInfo.ethereumAddress).toMatch(/^0x[0-9a-f]{40}$/);
    expect(report.evm?.address).toBe(notaryInfo.ethereumAddress);
    expect(proverInfo.notary.ethereumAddress).toBe(notaryInfo.ethereumAddress);
    expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
  }, 240_000);
});
