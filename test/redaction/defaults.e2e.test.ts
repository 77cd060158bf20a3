import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { firstEvent, proofData } from "../../testkit/sse.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * What a client gets without asking, through a real `cli prover start` (embedded notary, one real MPC session, the
 * default SQLite store): a response's Set-Cookie value hidden in the proof with no T-REDACTED at all, and the proof
 * kept in the stream PROVER_PROOF_STREAM names, which only the prover may write.
 */
const MPC_MS = 240_000;
const COOKIE = "sid-7f3e9a1c42";
const STREAM = "attested-answers";
const HIDDEN = "█";

let target: Server<undefined>;
let prover: RunningProver;

beforeAll(async () => {
  const tls = tlsFixture();
  // A login-like answer: the session cookie is the secret; the body is not.
  target = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: tls.chainPem, key: tls.leafKeyPem },
    fetch: () => Response.json({ loggedIn: true }, { headers: { "set-cookie": `session=${COOKIE}; HttpOnly; Secure` } }),
  });
  prover = await startProver(SOURCE_CLI, target.port!, { PROVER_PROOF_STREAM: STREAM });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  target?.stop(true);
}, 120_000);

const streamIds = async (stream: string) => {
  const answer = (await (await fetch(`${prover.url}/stores/${stream}/data/partitions/0/last?count=10`)).json()) as {
    messages: { content: { body: { requestId: string } } }[];
  };
  return answer.messages.map((m) => m.content.body.requestId);
};

describe("defaults a client does not ask for", () => {
  test(
    "Set-Cookie's value is hidden with no T-REDACTED; the proof lands in the configured proofs stream, which only the prover writes",
    async () => {
      const requestId = crypto.randomUUID();
      const event = firstEvent(`${prover.url}/proof/${requestId}`, MPC_MS);
      const response = await fetch(`${prover.url}/proxy`, {
        headers: { "t-proxy-url": `https://${TARGET_HOST}:${target.port}/login`, "t-request-id": requestId },
      });
      expect(response.status).toBe(200);
      // The client itself gets the cookie: only the proof hides it.
      expect(response.headers.get("set-cookie")).toContain(COOKIE);
      const { proofText } = proofData(await event);
      expect(proofText).not.toContain(COOKIE);

      const proofPath = join(scratchDir("defaults-e2e"), "proof.json");
      writeFileSync(proofPath, proofText);
      const result = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", proofPath, "--json"]);
      expect(result.exitCode).toBe(0);
      const verified = JSON.parse(result.stdout) as { recv: { text: string }; redactions: { pattern: string; matched: boolean }[] };
      const cookieLine = `session=${COOKIE}; HttpOnly; Secure`;
      expect(verified.recv.text.toLowerCase()).toContain(`set-cookie: ${HIDDEN.repeat(cookieLine.length)}\r\n`);
      expect(verified.recv.text).toContain('{"loggedIn":true}');
      expect(verified.redactions).toContainEqual(expect.objectContaining({ pattern: "default:res:header:set-cookie", matched: true }));

      // Kept in the configured stream, not in the default one; and nobody else may publish to it.
      expect(await streamIds(STREAM)).toEqual([requestId]);
      expect(await streamIds("proofs")).toEqual([]);
      const publish = await fetch(`${prover.url}/stores/${STREAM}/data/partitions/0`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: { body: { requestId: crypto.randomUUID() } } }),
      });
      expect(publish.status).toBe(403);
      expect(await publish.json()).toEqual({ error: `Stream ${STREAM} is written only by the prover` });
    },
    MPC_MS,
  );
});
