import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, type LogFields, type Logger } from "../../../src/log.ts";
import type { ProofOutcome } from "../../../src/proof/outcome.ts";
import { ProofDelivery } from "../../../src/prover/delivery/proof-delivery.ts";
import { ProofHub } from "../../../src/prover/delivery/proof-hub.ts";
import { type ProofRecords, type Store, loadNodeKey, openStore } from "../../../src/store/index.ts";
import { signedSample } from "../../proof/fixtures.ts";
import { scratchDir } from "../../../testkit/env.ts";

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
  let records: ProofRecords;
  /** Error lines delivery logged, as message and fields; others go to the quiet logger. */
  const errors: { message: string; fields?: LogFields }[] = [];
  const quiet = createLogger({ level: "error" });
  const log: Logger = { ...quiet, log: () => undefined, error: (message, fields) => errors.push({ message, fields }), child: () => log };

  beforeAll(async () => {
    const dataDir = scratchDir("delivery-unit");
    store = await openStore({ dataDir });
    records = await store.proofRecords(loadNodeKey(dataDir), "proofs");
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

  test("a proof made for an id another prover already settled is not delivered: subscribers get the recorded outcome, and the save is logged as an error", async () => {
    const requestId = crypto.randomUUID();
    await delivery.claim(requestId);
    const watch = delivery.watch(requestId);
    // What another prover sharing the store records for an id of a prover it declared dead.
    const recorded = { code: "session_failed", message: "the prover running this session stopped" } as const;
    expect(await records.saveFailure(requestId, recorded)).toEqual({ saved: true });
    errors.length = 0;
    const delivered = await delivery.settle(requestId, { event: "proof", proof: signedSample().proof });
    expect(delivered).toEqual({ event: "error", requestId, ...recorded });
    expect(await watch.outcome).toEqual(delivered);
    expect(await delivery.watch(requestId).outcome).toEqual(delivered);
    expect(errors).toEqual([{ message: "a proof was made for an id already settled; the recorded outcome is delivered instead", fields: { requestId, recorded: "session_failed" } }]);
  });
});
