import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { prove } from "../../../src/client/index.ts";
import type { QuorumProof } from "../../../src/proof/quorum.ts";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary } from "../../../testkit/notary.ts";
import { scratchDir, tlsFixture } from "../../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../../testkit/prover.ts";
import { errorData, openStream, proofData } from "../../../testkit/sse.ts";
import { type VersionedTarget, startVersionedTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";

/**
 * A quorum of notaries (T-QUORUM): three standalone `cli notary start`s with proxy mode on, and a `cli prover start`
 * listing them. A call proven by 2 of them gets one quorum proof, which `cli verify` accepts only with 2 distinct
 * pinned notaries; calls a quorum cannot prove are refused before anything is sent; sessions that state different
 * claims give quorum_disagreement, never a proof; a stopped notary is stepped over, two stopped refuse at once.
 */
const KEY = "quorum-prover-key-81c2";
let work: string;
let target: VersionedTarget;
let notaries: KeyedNotary[];
/** The three notaries' keys in one file, as `--notary-pub-key` takes several. */
let allKeys: string;
let prover: RunningProver;
/** A prover whose default is a quorum of 2 (PROVER_NOTARY_QUORUM). */
let quorumByDefault: RunningProver;

beforeAll(async () => {
  work = scratchDir("quorum");
  target = await startVersionedTarget(tlsFixture(), "TLSv1.3");
  const settings = ["host: 127.0.0.1", "port: 0", "notarization:", "  private_key_path: notary.key", ...proxyToLocalTargets([target.port])];
  notaries = await Promise.all([0, 1, 2].map(() => startKeyedNotary(KEY, settings)));
  allKeys = join(work, "notaries.pub");
  writeFileSync(allKeys, notaries.map((n) => readFileSync(n.pubPath, "utf8")).join(""));
  const env = { PROVER_NOTARY_URL: notaries.map((n) => n.notary.url).join(","), PROVER_NOTARY_API_KEY: KEY, PROVER_NOTARY_KEYS: allKeys, PROVER_ENGINE_HOSTS: "1" };
  [prover, quorumByDefault] = await Promise.all([startProver(SOURCE_CLI, target.port, env), startProver(SOURCE_CLI, target.port, { ...env, PROVER_NOTARY_QUORUM: "2" })]);
}, 180_000);

afterAll(async () => {
  await Promise.all([prover?.stop(), quorumByDefault?.stop()]);
  for (const n of notaries ?? []) n.notary.process.kill("SIGKILL");
  target?.stop();
}, 60_000);

const url = (path: string) => `https://${TARGET_HOST}:${target.port}${path}`;

/** A /proxy call in proxy mode, with the proof stream subscribed first; its answer and the stream's one event. */
async function call(on: RunningProver, headers: Record<string, string>, init: RequestInit = {}) {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${on.url}/proof/${requestId}`, 30_000);
  const response = await fetch(`${on.url}/proxy`, { ...init, headers: { "t-proxy-url": url("/data"), "t-request-id": requestId, "t-proof-mode": "proxy", ...headers } });
  return { requestId, response, events: stream.events };
}

const cliVerify = (proofText: string, keys: string, ...flags: string[]) => {
  const proofPath = join(work, `proof-${crypto.randomUUID()}.json`);
  writeFileSync(proofPath, proofText);
  return runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", keys, "--proof", proofPath, ...flags]);
};

describe("a quorum of 2 of 3 notaries", () => {
  test("one quorum proof: cli verify accepts it with the three keys, refuses it with one key or --quorum 3", async () => {
    const { requestId, response, events } = await call(prover, { "t-quorum": "2", "t-claim": "res:body:user.name,res:body:user.id>999" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ user: { name: "alice" } });
    const [event] = await events;
    const { proofText } = proofData(event!);
    const quorum = JSON.parse(proofText) as QuorumProof;
    expect(quorum).toMatchObject({ version: "tlsproof-quorum/1", quorum: 2, requestId, requestLine: "GET /data HTTP/1.1" });
    expect(quorum.proofs).toHaveLength(2);
    // Two notaries, each its own session and dial: two keys, and each proof's own time and bytes.
    expect(new Set(quorum.proofs.map((p) => p.body.notary.publicKey)).size).toBe(2);

    const verified = await cliVerify(proofText, allKeys, "--quorum", "2", "--json");
    expect(verified.stderr).toBe("");
    expect(verified.exitCode).toBe(0);
    const report = JSON.parse(verified.stdout) as { quorum: number; notaries: string[]; claims: { text: string }[] };
    expect(report.quorum).toBe(2);
    expect(new Set(report.notaries).size).toBe(2);
    expect(report.claims.map((c) => c.text)).toEqual(['res:body:user.name = "alice"', "res:body:user.id > 999: holds"]);
    // A quorum proof states its own size: no --quorum needed to hold it to it.
    expect((await cliVerify(proofText, allKeys)).stdout).toContain("Quorum valid (at least 2): 2 proofs");

    const signerOf = (index: number) => notaries.find((n) => quorum.proofs[index]!.body.notary.publicKey === readFileSync(n.pubPath, "utf8"));
    const oneKey = await cliVerify(proofText, signerOf(0)!.pubPath, "--quorum", "2");
    expect(oneKey.exitCode).toBe(1);
    expect(oneKey.stderr).toContain("proof 2: invalid proof: signed by a different notary key");
    const three = await cliVerify(proofText, allKeys, "--quorum", "3");
    expect(three.exitCode).toBe(1);
    expect(three.stderr).toContain("not a quorum of 3: 2 distinct notaries signed them");
  }, 60_000);

  test("the client's prove() asks for the quorum and verifies it against the pinned keys", async () => {
    const keys = notaries.map((n) => readFileSync(n.pubPath, "utf8"));
    const result = await prove({
      prover: prover.url,
      url: url("/data"),
      notaryKeys: keys,
      mode: "proxy",
      claims: ["res:body:user.name"],
      quorum: 2,
      allowTestTrustAnchor: true,
    });
    expect(result.quorum?.required).toBe(2);
    expect(new Set(result.quorum?.notaries).size).toBe(2);
    expect(result.claims.map((c) => c.kind === "value" && c.value)).toEqual(['"alice"']);
    // Asking 3 of the same keys makes a quorum proof of 3.
    const three = await prove({ prover: prover.url, url: url("/data"), notaryKeys: keys, mode: "proxy", claims: "res:body:user.name", quorum: 3, allowTestTrustAnchor: true });
    expect(three.quorum?.proofs).toHaveLength(3);
  }, 60_000);

  test("cli prove --quorum 2 writes a quorum proof it verified; --quorum 0 is a usage error", async () => {
    const out = join(work, `quorum-${crypto.randomUUID()}.json`);
    const args = ["prove", "--prover", prover.url, "--notary-pub-key", allKeys, "--url", url("/data"), "--out", out, "--mode", "proxy", "--claim", "res:body:user.name", "--allow-test-anchor"];
    const proved = await runCli(SOURCE_CLI, [...args, "--quorum", "2", "--answer", join(work, "answer.json")]);
    expect(proved.stderr).toBe('claim: res:body:user.name = "alice"\n');
    expect(proved.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(out, "utf8"))).toMatchObject({ version: "tlsproof-quorum/1", quorum: 2 });
    const wrong = await runCli(SOURCE_CLI, [...args, "--quorum", "0"]);
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain("--quorum must be a whole number from 1 to 16");
  }, 60_000);

  test("calls a quorum cannot prove are refused with a 400 naming what to change, before anything is sent", async () => {
    const refusal = async (headers: Record<string, string>, init: RequestInit = {}) => {
      const { response, events } = await call(prover, headers, init);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(response.status).toBe(400);
      // The refusal settles the id at once: the subscriber hears it.
      expect(errorData((await events)[0]!).code).toBe(body.error.code);
      return body.error;
    };
    expect(await refusal({ "t-quorum": "2" })).toEqual({ code: "invalid_header", message: expect.stringContaining("name them in T-CLAIM") });
    expect((await refusal({ "t-quorum": "4", "t-claim": "res:body:user.name" })).message).toBe(
      "T-QUORUM: 4 distinct notaries asked, and this prover has 3 (PROVER_NOTARY_URL)",
    );
    expect((await refusal({ "t-quorum": "2", "t-claim": "res:status", "content-type": "application/json" }, { method: "POST", body: "{}" })).message).toContain(
      "a quorum proves GET requests only, not POST",
    );
    expect((await refusal({ "t-quorum": "2", "t-claim": "res:status", "t-proof-mode": "mpc" })).message).toContain("use T-PROOF-MODE: proxy");
    expect((await refusal({ "t-quorum": "2", "t-claim": "res:status", "t-proxy-reveal": "none" })).message).toContain("T-PROXY-REVEAL: none hides it");
    expect((await refusal({ "t-quorum": "0", "t-claim": "res:status" })).message).toBe("T-QUORUM must be a whole number from 1 to 16");
  }, 60_000);

  test("sessions whose answers differ (a counter) state different claims: quorum_disagreement naming them, and no proof", async () => {
    const { response, events } = await call(prover, { "t-proxy-url": url("/counter"), "t-quorum": "2", "t-claim": "res:body:count,res:status" });
    expect(response.status).toBe(200);
    const failure = errorData((await events)[0]!);
    expect(failure.code).toBe("quorum_disagreement");
    expect(failure.message).toMatch(/do not state the same claims \(the answer changed between them\): proof 2 states res:body:count = \d+ where proof 1 states res:body:count = \d+$/);
  }, 60_000);

  test("PROVER_NOTARY_QUORUM=2: calls get a quorum by default and need claims; T-QUORUM: 1 asks for one notary", async () => {
    const { response } = await call(quorumByDefault, {});
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("name them in T-CLAIM");
    const quorum = await call(quorumByDefault, { "t-claim": "res:status" });
    expect(JSON.parse(proofData((await quorum.events)[0]!).proofText)).toMatchObject({ version: "tlsproof-quorum/1", quorum: 2 });
    const single = await call(quorumByDefault, { "t-quorum": "1" });
    expect(JSON.parse(proofData((await single.events)[0]!).proofText)).toMatchObject({ version: "tlsproof/1" });
  }, 60_000);

  test("with one notary stopped a quorum of 2 still proves; with two stopped it is refused at once (503)", async () => {
    notaries[2]!.notary.process.kill("SIGKILL");
    await notaries[2]!.notary.process.exited;
    // The prover may not know yet: a member that finds its notary down moves to one no other member took.
    for (let i = 0; i < 3; i++) {
      const { response, events } = await call(prover, { "t-quorum": "2", "t-claim": "res:body:user.name" });
      expect(response.status).toBe(200);
      const proofText = proofData((await events)[0]!).proofText;
      expect((await cliVerify(proofText, allKeys, "--quorum", "2")).exitCode).toBe(0);
    }
    notaries[1]!.notary.process.kill("SIGKILL");
    await notaries[1]!.notary.process.exited;
    const refused = async () => {
      const { response, events } = await call(prover, { "t-quorum": "2", "t-claim": "res:body:user.name" });
      void events.catch(() => {});
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).not.toBeNull();
      return ((await response.json()) as { error: { code: string; message: string } }).error;
    };
    // The first call may be the one that finds the second notary down; from then on the prover knows, and refuses
    // before opening any session.
    expect((await refused()).code).toBe("notary_unavailable");
    expect(await refused()).toEqual({ code: "notary_unavailable", message: "a quorum of 2 needs 2 notaries that answer; 1 of the 3 of PROVER_NOTARY_URL do" });
    // One notary is still a quorum of one.
    const { response } = await call(prover, { "t-claim": "res:body:user.name" });
    expect(response.status).toBe(200);
  }, 90_000);
});
