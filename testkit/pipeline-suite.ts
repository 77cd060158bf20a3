import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { scratchDir, tlsFixture } from "./env.ts";
import { type CliCommand, type RunningProver, runCli, startProver } from "./prover.ts";
import { firstEvent, openStream, proofData } from "./sse.ts";
import { SECRET_VALUE, startTarget } from "./target.ts";
import { TARGET_HOST } from "./tls-fixture.ts";
import { once } from "./once.ts";
import { eventually } from "./wait.ts";
import type { ProofMode } from "../src/proof/format.ts";

const CLIENT_API_KEY = "client-api-key-7781-do-not-leak";
const CARD_NUMBER = "4111-2222-3333-4444";
const HIDDEN = "█";

interface VerifiedJson {
  valid: boolean;
  requestId: string;
  serverName: string;
  testTrustAnchor: boolean;
  sent: { text: string; revealed: { start: number; end: number; data: string }[] };
  recv: { text: string; revealed: { start: number; end: number; data: string }[] };
  redactions: { pattern: string; matched: boolean; spans: { direction: string; start: number; end: number }[] }[];
}

/** Every revealed byte of a proof, decoded: what a reader of the proof can learn. */
function revealedText(proof: { body: { transcript: Record<"sent" | "recv", { revealed: { data: string }[] }> } }): string {
  return (["sent", "recv"] as const)
    .flatMap((side) => proof.body.transcript[side].revealed.map((r) => Buffer.from(r.data, "base64").toString("latin1")))
    .join("\n");
}

/**
 * The proof pipeline end to end through a real `cli prover start` process (embedded notary, a real local TLS
 * server), and `cli verify` on what it delivered, in the prover's default mode `mode`. Run against source (MPC) and
 * binary (proxy mode: the binary's MPC proves in test/cli/prove.binary.e2e.test.ts and the demo's test).
 */
export function pipelineSuite(name: string, cli: CliCommand, mode: ProofMode) {
  describe(name, () => {
    let target: Server<undefined>;
    let prover: RunningProver;
    let work: string;

    beforeAll(async () => {
      work = scratchDir("pipeline");
      target = startTarget(tlsFixture());
      prover = await startProver(cli, target.port!, { PROVER_PROOF_MODE: mode });
    }, 120_000);

    afterAll(async () => {
      const exitCode = await prover?.stop();
      target?.stop(true);
      expect(exitCode).toBe(0);
    }, 120_000);

    const verify = (proofPath: string, keyPath = prover.notaryPubPath, json = true) =>
      runCli(cli, ["verify", "--allow-test-anchor", "--notary-pub-key", keyPath, "--proof", proofPath, ...(json ? ["--json"] : [])]);

    /** A GET with redactions, its subscriber registered before the call. */
    const getProof = once(async () => {
      const requestId = crypto.randomUUID();
      // The subscription is registered before the call: the stream's first comment says it waits for the proof.
      const stream = await openStream(`${prover.url}/proof/${requestId}`, 240_000);
      const comments = [...stream.comments];
      const response = await fetch(`${prover.url}/proxy`, {
        headers: {
          "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data?view=full`,
          "T-REQUEST-ID": requestId,
          "T-REDACTED": "req:header:x-api-key, res:body:secret",
          "x-api-key": CLIENT_API_KEY,
        },
      });
      const answer = (await response.json()) as { secret: string; user: { name: string } };
      // Without its proof, the prover's log says what the session did.
      const events = await stream.events.catch((error: unknown) => {
        throw new Error(`no proof for ${requestId} (/proxy answered ${response.status}: ${error}); the prover's log ends:\n${prover.log().slice(-6000)}`);
      });
      return { requestId, comments, response, answer, events, proofText: proofData(events[0]!).proofText };
    });

    /** A POST with a JSON body, subscribed to only once the proof is stored. */
    const postProof = once(async () => {
      const requestId = crypto.randomUUID();
      const response = await fetch(`${prover.url}/proxy`, {
        method: "POST",
        headers: {
          "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/echo`,
          "T-REQUEST-ID": requestId,
          // In MPC mode a body holding a hidden value is hidden whole (the request rule); the card's echo is hidden too.
          "T-REDACTED": "req:body:, req:body:card",
          "content-type": "application/json",
        },
        body: JSON.stringify({ card: CARD_NUMBER, amount: 12 }),
      });
      const echoed = (await response.json()) as { method: string; headers: Record<string, string> };
      // This subscriber is late: it subscribes once the proof is in the proofs stream.
      const stored = response.status === 200 ? await eventually(storedIds, (ids) => ids.includes(requestId), 240_000) : [];
      const late = stored.includes(requestId) ? await firstEvent(`${prover.url}/proof/${requestId}`, 120_000) : undefined;
      return { requestId, response, echoed, stored, late };
    });

    const storedIds = async () =>
      ((await (await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=10`)).json()) as {
        messages: { content: { body: { requestId: string } } }[];
      }).messages.map((m) => m.content.body.requestId);

    test("GET with redaction: a subscriber that came first gets a proof that verifies and hides the values", async () => {
      const { requestId, comments, response, answer, events } = await getProof();
      expect(comments).toEqual(["waiting for the proof"]);
      expect(response.status).toBe(200);
      expect(response.headers.get("t-proof-id")).toBe(requestId);
      expect(answer.secret).toBe(SECRET_VALUE); // the client sees the whole answer
      expect(answer.user.name).toBe("alice");

      expect(events).toHaveLength(1);
      const { publicKey, proofText: data } = proofData(events[0]!);
      // The key before the first `|` is the notary's SPKI PEM, as written to notary.pub.
      expect(publicKey).toBe(prover.notaryPubPem);
      const proof = JSON.parse(data);
      expect(proof.body.requestId).toBe(requestId);
      expect(data).not.toContain(CLIENT_API_KEY);
      expect(data).not.toContain(SECRET_VALUE);
      expect(revealedText(proof)).not.toContain(CLIENT_API_KEY);
      expect(revealedText(proof)).not.toContain(SECRET_VALUE);

      const proofPath = join(work, "get-proof.json");
      writeFileSync(proofPath, data);
      const result = await verify(proofPath);
      expect(result.stderr).toBe("");
      expect(result.exitCode).toBe(0);
      const verified = JSON.parse(result.stdout) as VerifiedJson;
      expect(verified.valid).toBe(true);
      expect(verified.serverName).toBe(TARGET_HOST);
      expect(verified.testTrustAnchor).toBe(true);
      expect(verified.sent.text).toStartWith("GET /data?view=full HTTP/1.1\r\n");
      // The engine writes headers in an order of its own: the key's value, and every header it wrote after it, are one
      // hidden block; no byte after the first hidden one is revealed but line breaks (the request rule).
      expect(verified.sent.text).toMatch(new RegExp(`\r\nx-api-key: ${HIDDEN}{${CLIENT_API_KEY.length},}`));
      const afterHidden = verified.sent.text.slice(verified.sent.text.indexOf(HIDDEN));
      expect(afterHidden).toMatch(/^[█\r\n]+\r\n\r\n$/);
      expect(verified.sent.text.slice(0, verified.sent.text.indexOf(HIDDEN)).toLowerCase()).toContain(`host: ${TARGET_HOST}:`);
      expect(verified.recv.text).toStartWith("HTTP/1.1 200 OK\r\n");
      expect(verified.recv.text).toContain(`"secret":${HIDDEN.repeat(SECRET_VALUE.length + 2)},"items"`);
      expect(verified.recv.text).toContain('"name":"alice"');
      expect(verified.redactions.map((r) => [r.pattern, r.matched]).filter(([pattern]) => pattern !== "req:hidden-header-block")).toEqual([
        ["req:header:x-api-key", true],
        ["res:body:secret", true],
      ]);

      const human = await verify(proofPath, prover.notaryPubPath, false);
      expect(human.exitCode).toBe(0);
      expect(human.stdout).toContain("TEST trust anchor");
      expect(human.stdout).toContain(TARGET_HOST);
      expect(human.stdout).not.toContain(CLIENT_API_KEY);
    }, 240_000);

    test("POST with a JSON body: a subscriber that comes after the proof was made still gets it", async () => {
      const { requestId, response, echoed, stored, late } = await postProof();
      expect(response.status).toBe(200);
      expect(response.headers.get("t-proof-id")).toBe(requestId);
      expect(echoed.method).toBe("POST");
      expect(echoed.headers["accept-encoding"]).toBe("identity");
      expect(echoed.headers.connection).toBe("close");
      expect(echoed.headers["t-request-id"]).toBeUndefined();

      expect(stored).toContain(requestId);
      const { proofText: data } = proofData(late!);
      const proof = JSON.parse(data);
      // Hidden in the request, and its echo in the response is hidden too (the proof's echo:* entry).
      expect(revealedText(proof)).not.toContain(CARD_NUMBER);
      const proofPath = join(work, "post-proof.json");
      writeFileSync(proofPath, data);
      const verified = JSON.parse((await verify(proofPath)).stdout) as VerifiedJson;
      expect(verified.sent.text).toStartWith("POST /echo HTTP/1.1\r\n");
      // The body hidden whole, its length shown: the engine serialises JSON bodies itself, keys in sorted order.
      expect(verified.sent.text).toEndWith(`\r\n\r\n${HIDDEN.repeat(`{"amount":12,"card":"${CARD_NUMBER}"}`.length)}`);
    }, 240_000);

    test("verify rejects a proof with one changed byte, a foreign key, a truncated file and a missing file", async () => {
      const getProofText = (await getProof()).proofText;
      const proof = JSON.parse(getProofText);
      const revealed = proof.body.transcript.recv.revealed[0];
      const bytes = Buffer.from(revealed.data, "base64");
      bytes[bytes.indexOf("alice")] = "A".charCodeAt(0); // one byte of the proven answer
      revealed.data = bytes.toString("base64");
      const tampered = join(work, "tampered.json");
      writeFileSync(tampered, JSON.stringify(proof));
      const tamperedResult = await verify(tampered);
      expect(tamperedResult.exitCode).toBe(1);
      expect(tamperedResult.stderr).toMatch(/^error: .*signature/);
      expect(tamperedResult.stderr.trim().split("\n")).toHaveLength(1);

      const keyDir = join(work, "other-notary");
      expect((await runCli(cli, ["notary", "keygen", "--out", keyDir])).exitCode).toBe(0);
      const original = join(work, "original.json");
      writeFileSync(original, getProofText);
      const foreign = await verify(original, join(keyDir, "notary.pub"));
      expect(foreign.exitCode).toBe(1);
      expect(foreign.stderr).toContain("different notary key");

      const truncated = join(work, "truncated.json");
      writeFileSync(truncated, getProofText.slice(0, Math.floor(getProofText.length / 2)));
      const truncatedResult = await verify(truncated);
      expect(truncatedResult.exitCode).toBe(1);
      expect(truncatedResult.stderr).toStartWith("error: ");

      const missing = await verify(join(work, "no-such-proof.json"));
      expect(missing.exitCode).toBe(2);

      const fromStdin = await runCli(cli, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", "-"], getProofText);
      expect(fromStdin.exitCode).toBe(0);
    }, 240_000);

    test("every proof is kept in the message store's proofs stream", async () => {
      const made = [(await getProof()).requestId, (await postProof()).requestId];
      const response = await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=10`);
      expect(response.status).toBe(200);
      const { messages } = (await response.json()) as { messages: { content: { body: { requestId: string } } }[] };
      const stored = messages.map((m) => m.content.body.requestId);
      expect(stored.toSorted()).toEqual(made.toSorted());
    }, 480_000);
  });
}
