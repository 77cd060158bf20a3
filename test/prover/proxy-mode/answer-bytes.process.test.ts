import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { tlsFixture } from "../../../testkit/env.ts";
import { sample, scrapeMetrics } from "../../../testkit/metrics.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../../testkit/prover.ts";
import { openStream, proofData } from "../../../testkit/sse.ts";
import { startTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { eventually } from "../../../testkit/wait.ts";

/**
 * The answer bytes proxy proofs may hold at once (PROVER_PROXY_INFLIGHT_BYTES), through `cli prover start`: each
 * proof reserves its largest allowed answer (T-MAX-RECV-DATA, else PROVER_PROXY_MAX_RECV_DATA) before anything is
 * sent; one without room is refused 503 with Retry-After. Here one full-size answer fits, plus 64 KiB.
 */
const MAX_RECV = 1024 * 1024;
let prover: RunningProver;
let target: Server<undefined>;
const url = (path: string) => `https://${TARGET_HOST}:${target.port}${path}`;

beforeAll(async () => {
  target = startTarget(tlsFixture());
  prover = await startProver(SOURCE_CLI, target.port!, {
    PROVER_PROOF_MODE: "proxy",
    PROVER_PROXY_MAX_RECV_DATA: String(MAX_RECV),
    PROVER_PROXY_INFLIGHT_BYTES: String(MAX_RECV + 64 * 1024),
  });
}, 60_000);

afterAll(async () => {
  // The target first: the held exchange then ends at once instead of the prover finishing it while it stops.
  target?.stop(true);
  await prover?.stop();
});

const proxy = (path: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url(path), "T-REQUEST-ID": crypto.randomUUID(), ...headers }, signal });

async function errorOf(response: Response): Promise<{ status: number; code: string; message: string; retryAfter: string | null }> {
  const { error } = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: error.code, message: error.message, retryAfter: response.headers.get("retry-after") };
}

describe("proxy-mode answer bytes in flight", () => {
  test("a full-size reservation in flight leaves room only for announced small answers; the others get 503 with Retry-After", async () => {
    const holding = new AbortController();
    // Held at the target for a minute: its reservation stays taken while the rest of the test runs.
    const held = proxy("/slow?ms=60000", {}, holding.signal).catch(() => undefined);
    try {
      const running = async () => sample(await scrapeMetrics(prover.url), "tlsproof_proxy_mode_sessions");
      expect(await eventually(running, (n) => n === 1, 30_000)).toBe(1);

      const refused = await errorOf(await proxy("/data"));
      expect(refused).toMatchObject({ status: 503, code: "over_capacity", retryAfter: "5" });
      expect(refused.message).toContain(`maximum of ${MAX_RECV + 64 * 1024} proxy-mode answer bytes in flight (PROVER_PROXY_INFLIGHT_BYTES)`);

      // Announcing a small answer reserves only that: it fits beside the held one, and is proven.
      const requestId = crypto.randomUUID();
      const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
      const small = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url("/data"), "T-REQUEST-ID": requestId, "T-MAX-RECV-DATA": "4096" } });
      expect(small.status).toBe(200);
      expect(proofData((await stream.events)[0]!).proofText).toContain(requestId);
    } finally {
      holding.abort();
      await held;
    }
  }, 90_000);

  test("T-MAX-RECV-DATA bounds the answer (502 response_too_large beyond it) and is itself bounded by PROVER_PROXY_MAX_RECV_DATA", async () => {
    const over = await errorOf(await proxy("/big?bytes=5000", { "T-MAX-RECV-DATA": "4096" }));
    expect(over).toMatchObject({ status: 502, code: "response_too_large" });
    expect(over.message).toContain("the answer exceeds 4096 bytes");
    const tooLarge = await errorOf(await proxy("/data", { "T-MAX-RECV-DATA": String(MAX_RECV + 1) }));
    expect(tooLarge).toMatchObject({ status: 400, code: "session_too_large", message: `announced sizes exceed this prover's limits (T-MAX-RECV-DATA ≤ ${MAX_RECV})` });
  }, 60_000);
});
