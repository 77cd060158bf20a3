import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Server } from "bun";
import { tlsFixture } from "../../testkit/env.ts";
import { BUN } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { eventually } from "../../testkit/wait.ts";
import { type RunningNotary, notaryConfig, notarySessions, startNotary } from "./support.ts";

/**
 * The notary signs only what it verified: a real `cli notary start` and a prover process that runs a real MPC
 * session, reveals every byte, and then declares the response's secret value hidden (dishonest-prover.ts).
 * The notary must refuse to sign, so no proof can claim a value was hidden that its readers can see.
 */
let notary: RunningNotary;
let target: Server<undefined>;

beforeAll(async () => {
  notary = await startNotary(notaryConfig("host: 127.0.0.1\nport: 0\nnotarization:\n  max_sent_data: 1024\n  max_recv_data: 2048\n"));
  target = startTarget(tlsFixture());
}, 90_000);

afterAll(() => {
  notary?.process.kill("SIGKILL");
  target?.stop(true);
});

/** Runs dishonest-prover.ts with this lie: the notary's answer to its attestation request. */
async function lieToNotary(lie: "hidden-secret" | "hidden-host"): Promise<{ signed?: boolean; code?: string; message?: string }> {
  const liar = Bun.spawn([BUN, join(import.meta.dir, "dishonest-prover.ts"), notary.url, String(target.port), tlsFixture().caPath, lie], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(liar.stdout).text(), new Response(liar.stderr).text(), liar.exited]);
  expect({ exitCode, stderr: exitCode === 0 ? "" : stderr }).toEqual({ exitCode: 0, stderr: "" });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { signed?: boolean; code?: string; message?: string };
}

test("a declared hidden span that was in fact revealed is refused, and nothing is signed", async () => {
  const outcome = await lieToNotary("hidden-secret");
  expect(outcome.signed).toBeUndefined();
  expect(outcome.message).toContain("declared redactions refused");
  expect(outcome.message).toMatch(/declared hidden, but recv bytes \d+\.\.\d+ are revealed/);
  expect(notary.log()).toContain("session verified");
  expect(notary.log()).not.toContain("proof signed");
  expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
}, 240_000);

test("a request whose Host is hidden is refused: a reader could not tell which server it asked", async () => {
  const outcome = await lieToNotary("hidden-host");
  expect(outcome.signed).toBeUndefined();
  expect(outcome.message).toContain("request refused: the request's Host header value is hidden");
  expect(notary.log()).not.toContain("proof signed");
  expect(await eventually(() => notarySessions(notary.url), (n) => n === 0, 10_000)).toBe(0);
}, 240_000);
