import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Server } from "bun";
import { type RunningNotary, eventually, notaryConfig, notarySessions, startNotary } from "../hardening/support.ts";
import { tlsFixture } from "../support/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../support/prover.ts";
import { openStream, proofData } from "../support/sse.ts";
import { startTarget } from "../support/target.ts";
import { TARGET_HOST } from "../support/tls-fixture.ts";

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
  const configPath = notaryConfig(
    ["host: 127.0.0.1", "port: 0", "notarization:", "  max_sent_data: 1024", "  max_recv_data: 2048", "  private_key_path: notary.key", "auth:", "  enabled: true", "  whitelist: keys.csv", ""].join("\n"),
    { "keys.csv": `"Name","ApiKey","CreatedAt"\n"prover","${KEY}","2026-01-01"\n` },
  );
  const keygen = await runCli(SOURCE_CLI, ["notary", "keygen", "--out", dirname(configPath), "--force"]);
  expect(keygen.exitCode).toBe(0);
  notaryPubPath = join(dirname(configPath), "notary.pub");
  notary = await startNotary(configPath);
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
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, 240_000);
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": requestId, "T-REDACTED": "res:body:secret" },
    });
    expect(response.status).toBe(200);
    const [event] = await stream.events;
    const { proofText } = proofData(event!);
    const proofPath = join(dirname(notaryPubPath), "proof.json");
    writeFileSync(proofPath, proofText);
    const verified = await runCli(SOURCE_CLI, ["verify", "--notary-pub-key", notaryPubPath, "--proof", proofPath, "--json"]);
    expect(verified.exitCode).toBe(0);
    const report = JSON.parse(verified.stdout) as { requestId: string; evm: { address: string } | null };
    expect(report.requestId).toBe(requestId);
    // A remote secp256k1 notary adds the EVM attestation too, under the address both /info routes publish.
    const notaryInfo = (await (await fetch(`${notary.url}/info`)).json()) as { ethereumAddress: string };
    const proverInfo = (await (await fetch(`${prover.url}/info`)).json()) as { notary: { ethereumAddress: string } };
    expect(notaryInfo.ethereumAddress).toMatch(/^0x[0-9a-f]{40}$/);
    expect(report.evm?.address).toBe(notaryInfo.ethereumAddress);
    expect(proverInfo.notary.ethereumAddress).toBe(notaryInfo.ethereumAddress);
    expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
  }, 240_000);
});
