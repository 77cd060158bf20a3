/**
 * The proof history cannot be poisoned from outside: after a crafted publish (a far-future,
 * MAX_SAFE_INTEGER entry aimed at the proofs stream) a real proof, made by a real proxy-mode session through a real
 * `cli prover start`, still lands in the proofs stream, node-signed and verifiable.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { verifyProof } from "../../src/proof/verify.ts";
import type { Proof } from "../../src/proof/format.ts";
import { isSignatureValid, type MessageObject, type RawMessage } from "../../src/store/message.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/wait.ts";

let target: Server<undefined>;
let prover: RunningProver;

beforeAll(async () => {
  target = startTarget(tlsFixture());
  prover = await startProver(SOURCE_CLI, target.port!, { PROVER_PROOF_MODE: "proxy" });
}, 120_000);

afterAll(async () => {
  expect(await prover?.stop()).toBe(0);
  target?.stop(true);
}, 120_000);

/** The proofs stream's newest messages in raw form. */
async function storedProofs(): Promise<RawMessage[]> {
  const text = await (await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=10&format=raw`)).text();
  return text
    .split("\n")
    .slice(0, -1)
    .map((line) => JSON.parse(line) as RawMessage);
}

test("after the crafted far-future publish is refused, a real proof is still stored in the proofs stream", async () => {
  const crafted = await fetch(`${prover.url}/stores/proofs/data/partitions/0`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content: { fake: "proof" }, timestamp: Number.MAX_SAFE_INTEGER, sequenceNumber: Number.MAX_SAFE_INTEGER }),
  });
  expect(crafted.status).toBe(403);
  expect(await storedProofs()).toEqual([]);

  const requestId = crypto.randomUUID();
  const response = await fetch(`${prover.url}/proxy`, {
    headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": requestId },
  });
  expect(response.status).toBe(200);
  await response.arrayBuffer();

  // The proof is stored once the session ends: wait for that state.
  const stored = await eventually(storedProofs, (messages) => messages.length > 0, 60_000);
  expect(stored).toHaveLength(1);
  const [message] = stored as [RawMessage];
  const info = (await (await fetch(`${prover.url}/info`)).json()) as { nodeAddress: string };
  expect(message[1][4]).toBe(info.nodeAddress);
  expect(isSignatureValid(message)).toBe(true);
  expect(Math.abs(message[1][2] - Date.now())).toBeLessThan(300_000);
  const proof = JSON.parse(message[7]) as Proof;
  expect(proof.body.requestId).toBe(requestId);
  expect(verifyProof(proof, prover.notaryPubPem, { allowTestTrustAnchor: true }).body.serverName).toBe(TARGET_HOST);

  // The object form of the same answer carries the same proof.
  const object = (await (await fetch(`${prover.url}/stores/proofs/data/partitions/0/last`)).json()) as { messages: MessageObject[] };
  expect(object.messages[0]?.content).toEqual(proof);
}, 120_000);
