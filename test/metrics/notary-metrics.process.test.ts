import { afterAll, beforeAll, expect, test } from "bun:test";
import type { PromMetrics } from "prom2javascript";
import { sample, scrapeMetrics } from "../../testkit/metrics.ts";
import { type RunningNotary, eventually, notaryConfig, startNotary } from "../../testkit/notary.ts";

/** GET /metrics of a standalone `cli notary start` with a whitelist; no MPC session runs. */
const KEY = "metrics-notary-key";
const authorized = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
let notary: RunningNotary;

beforeAll(async () => {
  const config = notaryConfig(
    ["host: 127.0.0.1", "port: 0", "notarization:", "  max_sent_data: 1024", "  max_recv_data: 2048", "  connect_timeout: 1", "auth:", "  enabled: true", "  whitelist: keys.csv", ""].join("\n"),
    { "keys.csv": `"Name","ApiKey","CreatedAt"\n"prover","${KEY}","2026-01-01"\n` },
  );
  notary = await startNotary(config);
}, 60_000);

afterAll(() => {
  notary?.process.kill("SIGKILL");
});

const scrape = (): Promise<PromMetrics> => scrapeMetrics(notary.url, authorized);

test("the notary's /metrics needs a whitelisted key", async () => {
  expect((await fetch(`${notary.url}/metrics`)).status).toBe(401);
  expect((await fetch(`${notary.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
});

test("sessions created, open and failed, and attestations by result", async () => {
  const session = await fetch(`${notary.url}/session`, { method: "POST", headers: authorized, body: JSON.stringify({ maxSentData: 1024, maxRecvData: 2048 }) });
  const { sessionId } = (await session.json()) as { sessionId: string };
  const opened = await scrape();
  expect(sample(opened, "tlsproof_notary_sessions_created_total")).toBe(1);
  expect(sample(opened, "tlsproof_notary_active_sessions")).toBe(1);
  // Its prover never connects: the attestation waits for a verification that never comes.
  const attestation = await fetch(`${notary.url}/session/${sessionId}/attestation`, {
    method: "POST",
    headers: authorized,
    body: JSON.stringify({ requestId: crypto.randomUUID(), redactions: [] }),
  });
  expect(attestation.status).toBe(500);
  const ended = await eventually(scrape, (metrics) => sample(metrics, "tlsproof_notary_active_sessions") === 0, 10_000);
  expect(sample(ended, "tlsproof_notary_session_failures_total")).toBe(1);
  expect(sample(ended, "tlsproof_notary_attestations_total", { result: "session_failed" })).toBe(1);
  expect(sample(ended, "tlsproof_notary_attestations_total", { result: "signed" })).toBeUndefined();
});
