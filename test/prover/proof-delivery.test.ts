import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "../../src/log.ts";
import type { ProofOutcome } from "../../src/proof/outcome.ts";
import { ProofDelivery } from "../../src/prover/proof-delivery.ts";
import { ProofHub } from "../../src/prover/proof-hub.ts";
import { type Store, loadNodeKey, openStore } from "../../src/store/index.ts";
import { signedSample } from "../proof/fixtures.ts";
import { scratchDir } from "../support/env.ts";

/**
 * The delivery layer over the real SQLite store (no MPC: outcomes are settled directly). Memory bound:
 * the hub holds one entry per id with subscribers, per id in flight here and per retained outcome (at most
 * `maxRetained`); nothing else, however many ids and subscribers come and go.
 */
const failure = (requestId: string, code: "session_failed" | "target_timeout" = "session_failed"): ProofOutcome => ({
  event: "error",
  requestId,
  code,
  message: "it failed",
});

describe("proof delivery over the real store", () => {
  let store: Store;
  let hub: ProofHub;
  let delivery: ProofDelivery;
  const log = createLogger({ level: "error" });

  beforeAll(async () => {
    const dataDir = scratchDir("delivery-unit");
    store = await openStore({ dataDir });
    const records = await store.proofRecords(loadNodeKey(dataDir), "proofs");
    hub = new ProofHub({ retentionMs: 60_000, maxRetained: 100 });
    delivery = new ProofDelivery(hub, records, { unknownRequestMs: 60_000, storePollMs: 60_000 }, log);
  });

  afterAll(async () => {
    await store?.close();
  });

  test("memory stays bounded: 1000 settled ids keep at most maxRetained outcomes; 5000 subscribers that leave leave nothing", async () => {
    for (let i = 0; i < 1000; i++) {
      const requestId = crypto.randomUUID();
      await delivery.claim(requestId);
      await delivery.settle(requestId, failure(requestId));
    }
    expect(hub.size()).toEqual({ waiting: 0, inFlight: 0, retained: 100 });

    const watches = Array.from({ length: 5000 }, () => delivery.watch(crypto.randomUUID()));
    expect(hub.size().waiting).toBe(5000);
    expect(delivery.totalSubscribers()).toBe(5000);
    for (const watch of watches) watch.cancel();
    expect(hub.size()).toEqual({ waiting: 0, inFlight: 0, retained: 100 });
    expect(delivery.totalSubscribers()).toBe(0);
  }, 60_000);

  test("an outcome older than the retained ones is read from the store", async () => {
    const oldest = crypto.randomUUID();
    await delivery.claim(oldest);
    await delivery.settle(oldest, failure(oldest, "target_timeout"));
    for (let i = 0; i < 150; i++) {
      const requestId = crypto.randomUUID();
      await delivery.claim(requestId);
      await delivery.settle(requestId, failure(requestId));
    }
    expect(hub.retainedOutcome(oldest)).toBeUndefined();
    expect(await delivery.watch(oldest).outcome).toEqual(failure(oldest, "target_timeout"));
  }, 60_000);

  test("a subscriber waiting before the claim gets the proof when it settles; the id is then used for ever", async () => {
    const requestId = crypto.randomUUID();
    const watch = delivery.watch(requestId);
    await delivery.claim(requestId);
    const { proof } = signedSample();
    const delivered = await delivery.settle(requestId, { event: "proof", proof });
    expect(delivered).toEqual({ event: "proof", proof });
    expect(await watch.outcome).toEqual({ event: "proof", proof });
    await expect(delivery.claim(requestId)).rejects.toMatchObject({ code: "duplicate_request_id" });
    expect(hub.size().waiting).toBe(0);
  });
});
