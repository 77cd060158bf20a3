import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PromMetrics } from "prom2javascript";
import type { Server } from "bun";
import { tlsFixture } from "../../testkit/env.ts";
import { sample, scrapeMetrics } from "../../testkit/metrics.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/wait.ts";

/**
 * GET /metrics of a real `cli prover start` (embedded notary, one warm session really set up with it),
 * scraped over HTTP and read with a Prometheus text-format parser.
 */
const SETUP_MS = 240_000;
const API_KEY = "metrics-test-key";
const auth = { authorization: `Bearer ${API_KEY}` };

let target: Server<undefined>;
let prover: RunningProver;

const scrape = (): Promise<PromMetrics> => scrapeMetrics(prover.url, auth);
/** The /proxy duration histogram's series: labels and count each. */
const proxyTimings = (families: PromMetrics) =>
  (families.tlsproof_proxy_duration_seconds?.data ?? []) as { labels: Record<string, string | undefined>; count: number }[];

beforeAll(async () => {
  target = startTarget(tlsFixture());
  prover = await startProver(SOURCE_CLI, target.port!, {
    PROVER_API_KEYS: API_KEY,
    PROVER_POOL_SIZE: "1",
    PROVER_POOL_HOSTS: TARGET_HOST,
  });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  target?.stop(true);
}, 120_000);

describe("GET /metrics", () => {
  test("needs an API key when keys are on", async () => {
    expect((await fetch(`${prover.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${prover.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(403);
  });

  test("a warm session set up with the embedded notary shows in the pool, setup and notary metrics", async () => {
    // Ready, or failed trying: a failed setup ends the wait at once and fails the test here.
    const families = await eventually(
      scrape,
      (f) => sample(f, "tlsproof_pool_ready_sessions") === 1 || sample(f, "tlsproof_pool_failures_in_a_row") !== 0,
      SETUP_MS,
      { intervalMs: 500 },
    );
    expect(sample(families, "tlsproof_pool_failures_in_a_row")).toBe(0);
    expect(sample(families, "tlsproof_pool_ready_sessions")).toBe(1);
    expect(families.tlsproof_session_setup_duration_seconds?.type).toBe("histogram");
    expect(sample(families, "tlsproof_session_setup_duration_seconds", { size: "1024x2048", result: "ok" })).toBe(1);
    expect(sample(families, "tlsproof_notary_sessions_created_total")).toBe(1);
    expect(sample(families, "tlsproof_notary_active_sessions")).toBe(1);
    expect(sample(families, "tlsproof_embedded_notary_sessions")).toBe(1);
    expect(sample(families, "tlsproof_engine_memory_bytes")).toBeGreaterThan(0);
    expect(sample(families, "tlsproof_process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(sample(families, "tlsproof_live_sessions")).toBe(0);
    // Only a refill ran: no request set a session up or waited for its turn.
    expect(sample(families, "tlsproof_setups_running")).toBe(0);
    expect(sample(families, "tlsproof_setups_waiting")).toBe(0);
    expect(sample(families, "tlsproof_exchanges_running")).toBe(0);
    expect(sample(families, "tlsproof_exchanges_waiting")).toBe(0);
    // The warm session's prover lives in an engine host: the hosts' memory shows, none was replaced.
    expect(sample(families, "tlsproof_engine_hosts")).toBeGreaterThanOrEqual(1);
    expect(sample(families, "tlsproof_engine_hosts_resident_memory_bytes")).toBeGreaterThan(100 * 2 ** 20);
    expect(sample(families, "tlsproof_engine_hosts_replaced_total", { reason: "hung" })).toBe(0);
    expect(sample(families, "tlsproof_engine_hosts_replaced_total", { reason: "died" })).toBe(0);
  }, SETUP_MS);

  test("a failed /proxy call is counted by code, timed by size class, and its id's record counted as store writes", async () => {
    const before = await scrape();
    const writes = sample(before, "tlsproof_store_operations_total", { operation: "write", kind: "claim", result: "ok" }) ?? 0;
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { ...auth, "T-PROXY-URL": "https://unknown.tlsproof.test/data", "T-REQUEST-ID": crypto.randomUUID() },
    });
    expect(response.status).toBe(502);
    const after = await scrape();
    expect(sample(after, "tlsproof_proofs_total", { outcome: "target_unresolvable" })).toBe(1);
    // Timed as an MPC call under the size class the request was given (`<max sent>x<max recv>`).
    const timed = proxyTimings(after).filter(({ labels }) => labels.mode === "mpc");
    expect(timed.map(({ labels, count }) => ({ result: labels.result, count }))).toEqual([{ result: "failed", count: 1 }]);
    expect(timed[0]?.labels.size).toMatch(/^\d+x\d+$/);
    expect(sample(after, "tlsproof_store_operations_total", { operation: "write", kind: "claim", result: "ok" })).toBe(writes + 1);
    expect(sample(after, "tlsproof_store_operations_total", { operation: "write", kind: "save_failure", result: "ok" })).toBeGreaterThanOrEqual(1);
  });

  test("a proxy-mode /proxy call is timed under its mode, with no size class (it has no MPC session)", async () => {
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { ...auth, "T-PROXY-URL": "https://unknown.tlsproof.test/data", "T-REQUEST-ID": crypto.randomUUID(), "T-PROOF-MODE": "proxy" },
    });
    expect(response.status).toBe(502);
    const after = await scrape();
    const timed = proxyTimings(after).filter(({ labels }) => labels.mode === "proxy");
    expect(timed.map(({ labels, count }) => ({ result: labels.result, size: labels.size, count }))).toEqual([{ result: "failed", size: undefined, count: 1 }]);
    expect(sample(after, "tlsproof_proxy_mode_sessions")).toBe(0);
  });

  test("open proof streams are counted while they are open; store queries count as reads", async () => {
    const stream = await fetch(`${prover.url}/proof/${crypto.randomUUID()}`, { headers: auth });
    expect(stream.status).toBe(200);
    expect(sample(await scrape(), "tlsproof_sse_subscribers")).toBe(1);
    await stream.body?.cancel();
    const families = await eventually(scrape, (f) => sample(f, "tlsproof_sse_subscribers") === 0, 10_000);
    expect(sample(families, "tlsproof_sse_subscribers")).toBe(0);
    const reads = sample(families, "tlsproof_store_operations_total", { operation: "read", kind: "query", result: "ok" }) ?? 0;
    const query = await fetch(`${prover.url}/stores/some-stream/data/partitions/0/last?count=1`);
    expect(query.status).toBe(200);
    expect(sample(await scrape(), "tlsproof_store_operations_total", { operation: "read", kind: "query", result: "ok" })).toBeGreaterThan(reads);
  });
});
