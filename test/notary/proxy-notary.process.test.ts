import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { VerifiedProofJson } from "../../src/proof/render.ts";
import { type KeyedNotary, eventually, startKeyedNotary } from "../../testkit/notary.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { threadCpuSeconds } from "../../testkit/process.ts";
import { verifyWithCli } from "../../testkit/prove.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { openStream, proofData } from "../../testkit/sse.ts";
import { type VersionedTarget, startVersionedTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * Standalone notaries and proxy mode: one notary without the `proxy` section, one with it (its own target
 * policy and resolve list). A prover whose only notary does not offer proxy mode gets a clear refusal naming
 * the setting; a prover with both sends every proxy session to the one that offers it.
 */
const KEY = "proxy-notary-prover-key-5d1e";
let target: VersionedTarget;
let plain: KeyedNotary;
let relaying: KeyedNotary;
let plainOnly: RunningProver;
let both: RunningProver;

beforeAll(async () => {
  target = await startVersionedTarget(tlsFixture(), "TLSv1.3");
  const base = ["host: 127.0.0.1", "port: 0", "notarization:", "  max_sent_data: 1024", "  max_recv_data: 2048", "  private_key_path: notary.key"];
  plain = await startKeyedNotary(KEY, base);
  relaying = await startKeyedNotary(KEY, [
    ...base,
    "proxy:",
    "  enabled: true",
    "  allow_private_targets: true",
    `  allowed_ports: [${target.port}]`,
    `  resolve: ["${TARGET_HOST}:${target.port}:127.0.0.1"]`,
  ]);
  const common = { PROVER_NOTARY_API_KEY: KEY, PROVER_ENGINE_HOSTS: "1" };
  plainOnly = await startProver(SOURCE_CLI, target.port, { ...common, PROVER_NOTARY_URL: plain.notary.url });
  both = await startProver(SOURCE_CLI, target.port, { ...common, PROVER_NOTARY_URL: `${plain.notary.url},${relaying.notary.url}` });
}, 180_000);

afterAll(async () => {
  await Promise.all([plainOnly?.stop(), both?.stop()]);
  plain?.notary.process.kill("SIGKILL");
  relaying?.notary.process.kill("SIGKILL");
  target?.stop();
}, 60_000);

const proxyCall = (prover: RunningProver, requestId = crypto.randomUUID()) =>
  fetch(`${prover.url}/proxy`, {
    headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" },
  });

describe("notaries and proxy mode", () => {
  test("a notary without proxy.enabled: the prover answers a 400 naming the setting", async () => {
    const response = await proxyCall(plainOnly);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(response.status).toBe(400);
    expect(body.error.code).toBe("proxy_mode_unavailable");
    expect(body.error.message).toContain("proxy: { enabled: true }");
    const info = (await (await fetch(`${plain.notary.url}/info`)).json()) as { proxyMode: boolean };
    expect(info.proxyMode).toBe(false);
  }, 30_000);

  test("with several notaries, proxy sessions go to the one that offers proxy mode", async () => {
    for (let i = 0; i < 3; i++) {
      const requestId = crypto.randomUUID();
      const stream = await openStream(`${both.url}/proof/${requestId}`, 30_000);
      const response = await proxyCall(both, requestId);
      expect(response.status).toBe(200);
      const [event] = await stream.events;
      const verified = await verifyWithCli(proofData(event!).proofText, relaying.pubPath, "--allow-hidden-request");
      expect(verified.exitCode).toBe(0);
      expect((JSON.parse(verified.stdout) as VerifiedProofJson).mode).toBe("proxy");
    }
    // Nothing is left open on the relaying notary once its proofs are signed.
    const open = () => fetch(`${relaying.notary.url}/info`).then((r) => r.json() as Promise<{ activeProxySessions: number }>);
    expect((await eventually(open, (info) => info.activeProxySessions === 0, 10_000)).activeProxySessions).toBe(0);
    // Neither did its proxy-mode proofs load the MPC engine, which starts at a notary's first MPC session: none of the
    // threads it spawns (named web-spawn-*) runs in the notary.
    const threads = [...threadCpuSeconds(relaying.notary.process.pid).values()].map((thread) => thread.name);
    expect(threads.length).toBeGreaterThan(0);
    expect(threads.filter((name) => name.startsWith("web-spawn"))).toEqual([]);
  }, 60_000);
});
