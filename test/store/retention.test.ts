import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger, type LogFields, type Logger } from "../../src/base/log.ts";
import { DEFAULT_PROOF_STREAM, loadNodeKey, openStore, type ProofRecords, type Store } from "../../src/store/index.ts";
import { storedMessageOf } from "../../src/store/message.ts";
import { messagePruning, proofPruning, pruneIntervalMs, startRetention } from "../../src/store/retention.ts";
import { eventually } from "../../testkit/wait.ts";
import { signedSample } from "../proof/fixtures.ts";
import { tempDir } from "./backends.ts";

/** The retention timer over the real SQLite store (the prune statements are tested on both backends in proof-records.test.ts). */
describe("store retention", () => {
  let store: Store;
  let records: ProofRecords;
  const lines: { message: string; fields?: LogFields }[] = [];
  const quiet = createLogger({ level: "error" });
  const log: Logger = { ...quiet, info: (message, fields) => lines.push({ message, fields }), warn: (message, fields) => lines.push({ message, fields }), child: () => log };

  beforeAll(async () => {
    const dataDir = tempDir();
    store = await openStore({ dataDir });
    records = await store.proofRecords(loadNodeKey(dataDir), DEFAULT_PROOF_STREAM);
  });
  afterAll(() => store?.close());

  const settledProof = async () => {
    const requestId = crypto.randomUUID();
    await records.claim(requestId);
    await records.saveProof(requestId, signedSample().proof);
    return requestId;
  };
  const outcomeCode = async (requestId: string) => {
    const recorded = await records.lookup(requestId);
    return recorded.state === "settled" && recorded.outcome.event === "error" ? recorded.outcome.code : recorded.state;
  };

  /**
   * Waits until everything saved so far is older than `retentionMs`: a proof published in the millisecond of the
   * prune's cut would outlive its record by one run (on a fast machine the first run came that soon).
   */
  const olderThan = async (retentionMs: number) => {
    const saved = Date.now();
    while (Date.now() <= saved + retentionMs) await Bun.sleep(1);
  };

  test("prunes at start and then periodically: proofs past the retention time read as outcome_expired, and each run that removed something says so", async () => {
    const first = await settledProof();
    await olderThan(1);
    const retention = startRetention(proofPruning(records), 1, log, 50);
    try {
      expect(await eventually(() => outcomeCode(first), (code) => code === "outcome_expired", 10_000)).toBe("outcome_expired");
      const second = await settledProof();
      expect(await eventually(() => outcomeCode(second), (code) => code === "outcome_expired", 10_000)).toBe("outcome_expired");
    } finally {
      await retention.stop();
    }
    const pruned = lines.filter((line) => line.message === "store retention: old outcomes cleared and proofs deleted");
    expect(pruned.length).toBeGreaterThanOrEqual(2);
    expect(pruned[0]!.fields).toEqual({ records: 1, proofs: 1 });
  });

  test("message retention deletes the old messages of every stream but the proofs stream, and says so", async () => {
    const proofId = await settledProof();
    const old = Date.now() - 10 * 60_000;
    await store.messages.insert([storedMessageOf([32, ["retained/a", 0, old, 0, "0x" + "ab".repeat(20), "c"], null, 27, 0, 0, null, "{}", null, 2, "0x00"])]);
    const retention = startRetention(messagePruning(store.messages, DEFAULT_PROOF_STREAM), 60_000, log, 50);
    try {
      await eventually(() => lines.some((line) => line.message === "store retention: old messages deleted"), Boolean, 10_000);
    } finally {
      await retention.stop();
    }
    expect(lines.find((line) => line.message === "store retention: old messages deleted")?.fields).toEqual({ messages: 1 });
    expect(await store.messages.read({ streamId: "retained/a", partition: 0, limit: 10, texts: [] })).toEqual([]);
    // The proofs stream is retention's of its own: the proof is still there.
    expect(await outcomeCode(proofId)).toBe("settled");
  });

  test("a proof younger than the retention time is kept", async () => {
    const young = await settledProof();
    const retention = startRetention(proofPruning(records), 3_600_000, log, 50);
    await retention.stop();
    expect(await outcomeCode(young)).toBe("settled");
  });

  test("runs a tenth of the retention time apart, at most hourly", () => {
    expect(pruneIntervalMs(30 * 86_400_000)).toBe(3_600_000);
    expect(pruneIntervalMs(600_000)).toBe(60_000);
  });
});
