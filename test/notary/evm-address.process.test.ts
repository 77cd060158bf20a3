import { afterAll, describe, expect, test } from "bun:test";
import { dirname, join } from "node:path";
import { addressOfPublicKey } from "../../src/core/eth-signature.ts";
import { readPublicKeyFile } from "../../src/proof/keys.ts";
import { type RunningNotary, notaryConfig, startNotary } from "../../testkit/notary.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";

/**
 * The Ethereum address a notary's EVM attestations recover to, as its /info and a prover's /info and /notaryinfo
 * publish it: the key's address for secp256k1, null for secp256r1 (which makes no EVM attestation). No MPC here.
 */
const running: { stop(): unknown }[] = [];
afterAll(async () => {
  for (const child of running) await child.stop();
}, 120_000);

async function notaryWithKey(algorithm: "secp256k1" | "secp256r1"): Promise<{ notary: RunningNotary; pubPath: string }> {
  const configPath = notaryConfig(["host: 127.0.0.1", "port: 0", "notarization:", "  private_key_path: notary.key", `  signature_algorithm: ${algorithm}`, ""].join("\n"));
  const keygen = await runCli(SOURCE_CLI, ["notary", "keygen", "--out", dirname(configPath), "--algorithm", algorithm, "--force"]);
  expect(keygen.exitCode).toBe(0);
  const notary = await startNotary(configPath);
  running.push({ stop: () => notary.process.kill("SIGKILL") });
  return { notary, pubPath: join(dirname(configPath), "notary.pub") };
}

describe("the notary's Ethereum address", () => {
  test("a secp256k1 notary's /info names its key's address", async () => {
    const { notary, pubPath } = await notaryWithKey("secp256k1");
    const info = (await (await fetch(`${notary.url}/info`)).json()) as { ethereumAddress: string };
    expect(info.ethereumAddress).toBe(addressOfPublicKey(readPublicKeyFile(pubPath).point));
  }, 60_000);

  test("a secp256r1 notary has none, and a prover using it says so in /info and /notaryinfo", async () => {
    const { notary } = await notaryWithKey("secp256r1");
    const info = (await (await fetch(`${notary.url}/info`)).json()) as Record<string, unknown>;
    expect(info.signatureAlgorithm).toBe("secp256r1");
    expect(info.ethereumAddress).toBeNull();

    // No session is made, so the target's port is never used.
    const prover: RunningProver = await startProver(SOURCE_CLI, 9, { PROVER_NOTARY_URL: notary.url });
    running.push(prover);
    const proverInfo = (await (await fetch(`${prover.url}/info`)).json()) as { notary: Record<string, unknown> };
    expect(proverInfo.notary.signatureAlgorithm).toBe("secp256r1");
    expect(proverInfo.notary.ethereumAddress).toBeNull();
    const notaryInfo = (await (await fetch(`${prover.url}/notaryinfo`)).json()) as Record<string, unknown>;
    expect(notaryInfo.ethereumAddress).toBeNull();
  }, 120_000);
});
