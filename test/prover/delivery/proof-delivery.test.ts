import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, type LogFields, type Logger } from "../../../src/base/log.ts";
import type { ProofOutcome } from "../../../src/proof/outcome.ts";
import { ProofDelivery } from "../../../src/prover/delivery/proof-delivery.ts";
import { ProofHub, outcomeBytes } from "../../../src/prover/delivery/proof-hub.ts";
import { type ProofRecords, type Store, loadNodeKey, openStore } from "../../../src/store/index.ts";
import { sampleBody, signedSample } from "../../proof/fixtures.ts";
import { generateKey } from "../../../src/proof/keys.ts";
import { signProof } from "../../../src/proof/sign.ts";
import { scratchDir } from "../../../testkit/env.ts";

/**
 * The delivery layer over the real SQLite store (no MPC: outcomes are settled directly). Memory bound:
 * the hub holds one entry per id with subscribers, per id in flight here and retained outcomes of at most
 * `maxRetainedBytes` together; nothing else, however many ids and subscribers come and go.
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
    // Room for 100 failures of the kind below (all the same size).
    hub = new ProofHub({ retentionMs: 60_000, maxRetainedBytes: 100 * outcomeBytes(failure(crypto.randomUUID())) });
    delivery = new ProofDelivery(hub, records, { unknownRequestMs: 60_000, storePollMs: 60_000 }, log);
  });

  afterAll(async () => {
    await store?.close();
  });

  test("memory stays bounded: 1000 settled ids keep at most maxRetainedBytes of outcomes; 5000 subscribers that leave leave nothing", async () => {
    for (let i = 0; i < 1000; i++) {
      const requestId = crypto.randomUUID();
      await delivery.claim(requestId);
      await delivery.settle(requestId, failure(requestId));
    }
    expect(hub.size()).toMatchObject({ waiting: 0, inFlight: 0, retained: 100 });

    const watches = Array.from({ length: 5000 }, () => delivery.watch(crypto.randomUUID()));
    expect(hub.size().waiting).toBe(5000);
    expect(delivery.totalSubscribers()).toBe(5000);
    for (const watch of watches) watch.cancel();
    expect(hub.size()).toMatchObject({ waiting: 0, inFlight: 0, retained: 100 });
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

  test("outcomes are kept by bytes: a large proof pushes out older ones, and one evicted from memory is read from the store by a late subscriber", async () => {
    const key = generateKey("secp256k1");
    /** A proof revealing `size` bytes of answer: ~4/3 of that in memory. */
    const proofOf = (size: number) => {
      const body = sampleBody(key);
      body.transcript.recv = { length: size, revealed: [{ start: 0, end: size, data: Buffer.alloc(size, 0x61).toString("base64") }] };
      body.redactions = [];
      return signProof(body, key);
    };
    const budget = 300_000;
    const bytesHub = new ProofHub({ retentionMs: 60_000, maxRetainedBytes: budget });
    const bytesDelivery = new ProofDelivery(bytesHub, records, { unknownRequestMs: 60_000, storePollMs: 60_000 }, log);
    const settled = async (outcome: ProofOutcome) => {
      const requestId = crypto.randomUUID();
      await bytesDelivery.claim(requestId);
      await bytesDelivery.settle(requestId, outcome);
      return requestId;
    };
    const smallIds = [await settled(failure("x")), await settled(failure("y"))];
    const large = proofOf(150_000);
    const first = await settled({ event: "proof", proof: large });
    expect(bytesHub.size()).toMatchObject({ retained: 3 });
    // A second large proof: the bytes of both pass the budget, so the oldest go until they fit.
    const second = await settled({ event: "proof", proof: proofOf(150_000) });
    expect(bytesHub.size()).toMatchObject({ retained: 1, retainedBytes: outcomeBytes({ event: "proof", proof: proofOf(150_000) }) });
    expect(bytesHub.size().retainedBytes).toBeLessThanOrEqual(budget);
    for (const id of [...smallIds, first]) expect(bytesHub.retainedOutcome(id)).toBeUndefined();
    expect(bytesHub.retainedOutcome(second)).toBeDefined();
    // The evicted proof comes from the store, whole.
    expect(await bytesDelivery.watch(first).outcome).toEqual({ event: "proof", proof: large });
    // A proof larger than the whole budget is not kept at all, and still delivered.
    const huge = proofOf(400_000);
    const hugeId = await settled({ event: "proof", proof: huge });
    expect(bytesHub.size()).toMatchObject({ retained: 0, retainedBytes: 0 });
    expect(await bytesDelivery.watch(hugeId).outcome).toEqual({ event: "proof", proof: huge });
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
