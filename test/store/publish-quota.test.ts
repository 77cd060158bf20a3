import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { ProverServer } from "../../src/app/prover.ts";
import { PublishQuota } from "../../src/store/publish-quota.ts";
import { appErrorOfAsync } from "../../testkit/app-error.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { startProverInProcess } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";

/** The quota_exceeded refusal's message, or undefined when the publish was admitted. */
async function refusal(admit: Promise<void>): Promise<string | undefined> {
  const refused = await appErrorOfAsync(() => admit);
  if (refused) expect(refused.code).toBe("quota_exceeded");
  return refused?.message;
}

describe("the publish quota", () => {
  test("a caller publishes at most its bytes in any minute; a minute later it may again; others are not held back", async () => {
    let now = 1_000_000;
    const quota = new PublishQuota({ callerBytesPerMinute: 1000, streamBytes: 1_000_000 }, async () => 0, () => now);
    await quota.admit("a", "s", 600);
    expect(await refusal(quota.admit("a", "s", 500))).toBe("this caller published 600 bytes in the last minute; at most 1000 (PROVER_STORE_PUBLISH_BYTES_PER_MIN)");
    expect(await refusal(quota.admit("b", "s", 1000))).toBeUndefined();
    now += 30_000;
    expect(await refusal(quota.admit("a", "s", 400))).toBeUndefined();
    expect(await refusal(quota.admit("a", "s", 1))).toContain("published 1000 bytes");
    now += 30_001;
    // The first 600 are over a minute old now: 400 of the last minute, room for 600.
    expect(await refusal(quota.admit("a", "s", 600))).toBeUndefined();
  });

  test("a stream holds at most its bytes: what the store holds, read again once a minute old, plus this prover's own publishes", async () => {
    let now = 0;
    let stored = 900;
    let reads = 0;
    const quota = new PublishQuota({ callerBytesPerMinute: 1_000_000, streamBytes: 1000 }, async () => (reads++, stored), () => now);
    expect(await refusal(quota.admit("a", "s", 100))).toBeUndefined();
    expect(await refusal(quota.admit("b", "s", 1))).toBe("stream s holds 1000 bytes; at most 1000 (PROVER_STORE_STREAM_BYTES)");
    expect(reads).toBe(1);
    // Retention deleted most of it; a minute later the store is asked again.
    stored = 100;
    now += 60_001;
    expect(await refusal(quota.admit("b", "s", 800))).toBeUndefined();
    expect(reads).toBe(2);
  });
});

describe("publishing through the prover, keys off", () => {
  let target: Server<undefined>;
  let server: ProverServer;
  beforeAll(async () => {
    target = startTarget(tlsFixture());
    ({ server } = await startProverInProcess(target.port!, { PROVER_STORE_PUBLISH_BYTES_PER_MIN: "20000", PROVER_STORE_STREAM_BYTES: "12000" }));
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    target?.stop(true);
  }, 60_000);

  const publish = (stream: string, bytes: number) =>
    fetch(`${server.url}/stores/${stream}/data/partitions/0`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "x".repeat(bytes) }) });

  test("a stream past its bytes and a caller past its minute get 429 with Retry-After; nothing of a refused publish is stored", async () => {
    // Each message counts twice its content (its RawMessage and its object form) and their framing.
    expect((await publish("quota-a", 4000)).status).toBe(200);
    const full = await publish("quota-a", 4000);
    expect(full.status).toBe(429);
    expect(full.headers.get("retry-after")).toBe("60");
    expect(((await full.json()) as { error: string }).error).toMatch(/^stream quota-a holds \d+ bytes; at most 12000 \(PROVER_STORE_STREAM_BYTES\)$/);
    const stored = (await (await fetch(`${server.url}/stores/quota-a/data/partitions/0/last?count=10`)).json()) as { messages: unknown[] };
    expect(stored.messages).toHaveLength(1);
    // Another stream has room, but this caller (its address) has used most of its minute.
    expect((await publish("quota-b", 4000)).status).toBe(200);
    const tooFast = await publish("quota-c", 4000);
    expect(tooFast.status).toBe(429);
    expect(((await tooFast.json()) as { error: string }).error).toContain("(PROVER_STORE_PUBLISH_BYTES_PER_MIN)");
  });
});
