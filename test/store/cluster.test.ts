/**
 * Several provers sharing one PostgreSQL store (src/store/cluster.ts), on the real database: settled ids
 * are NOTIFYed to every instance, and the pending ids of an instance that stopped heartbeating or left are
 * settled by a live one, once. SQLite has no cluster (one prover per store).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DEFAULT_PROOF_STREAM, loadNodeKey, openStore, type ClusterStore, type ProofRecords, type Store } from "../../src/store/index.ts";
import { eventually } from "../../testkit/wait.ts";
import { backends, type OpenedStore } from "./backends.ts";

const [sqlite, postgres] = backends as [(typeof backends)[0], (typeof backends)[0]];
const STOPPED = { code: "session_failed", message: "the prover running this session stopped" } as const;

test("a SQLite store has no cluster: its single prover settles its own ids at start-up", async () => {
  const opened = await sqlite.open();
  try {
    expect(await opened.handle.cluster("any")).toBeUndefined();
  } finally {
    await opened.cleanup();
  }
});

describe("provers sharing a PostgreSQL store", () => {
  let opened: OpenedStore;
  let other: Store;
  let a: { records: ProofRecords; cluster: ClusterStore };
  let b: { records: ProofRecords; cluster: ClusterStore };
  const instance = async (store: Store, id: string) => {
    const records = await store.proofRecords(loadNodeKey(opened.dataDir), DEFAULT_PROOF_STREAM, id);
    const cluster = (await store.cluster(id))!;
    await cluster.heartbeat();
    return { cluster, records };
  };
  beforeEach(async () => {
    opened = await postgres.open();
    other = await openStore(opened.options);
    a = await instance(opened.handle, "instance-a");
    b = await instance(other, "instance-b");
  });
  afterEach(async () => {
    await other.close();
    await opened.cleanup();
  });

  test("an id settled by one instance is notified to the other, after the outcome is readable", async () => {
    const heard: string[] = [];
    const outcomes: unknown[] = [];
    const stop = await b.cluster.listen((requestId) => {
      heard.push(requestId);
      void b.records.lookup(requestId).then((recorded) => outcomes.push(recorded));
    });
    try {
      const id = crypto.randomUUID();
      expect(await a.records.claim(id)).toBe(true);
      expect(await b.records.claim(id)).toBe(false);
      await a.records.saveFailure(id, { code: "target_request_failed", message: "the target answered 404" });
      expect(await eventually(() => outcomes.length, (n) => n === 1, 5_000)).toBe(1);
      expect(heard).toEqual([id]);
      expect(outcomes[0]).toEqual({ state: "settled", outcome: { event: "error", requestId: id, code: "target_request_failed", message: "the target answered 404" } });
    } finally {
      await stop();
    }
  });

  test("the pending ids of an instance that stopped heartbeating are settled by a live one, once, and notified", async () => {
    const heard: string[] = [];
    const stop = await a.cluster.listen((requestId) => heard.push(requestId));
    try {
      const [ofA, ofB, settledByA] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      await a.records.claim(ofA);
      await a.records.claim(settledByA);
      await a.records.saveFailure(settledByA, { code: "target_request_failed", message: "404" });
      await b.records.claim(ofB);
      // A is alive within the timeout: nothing is settled.
      expect(await b.cluster.settleAbandoned(60_000, STOPPED)).toEqual([]);
      // A beats once more and keeps quiet from then on; B keeps beating. Once A's heartbeat is older than
      // 200 ms, B takes over (the time is read before A's beat, so the beat is not older than it).
      const heartbeatA = Date.now();
      await a.cluster.heartbeat();
      const settled = await eventually(
        async () => {
          await b.cluster.heartbeat();
          return b.cluster.settleAbandoned(200, STOPPED);
        },
        (ids) => ids.length > 0,
        10_000,
      );
      expect(Date.now() - heartbeatA).toBeGreaterThanOrEqual(200);
      expect(settled).toEqual([ofA]);
      expect(await b.records.lookup(ofA)).toEqual({ state: "settled", outcome: { event: "error", requestId: ofA, ...STOPPED } });
      expect((await b.records.lookup(settledByA)).state).toBe("settled");
      expect(await b.records.lookup(ofB)).toMatchObject({ state: "pending" });
      // Swept once: a second sweep finds nothing more.
      expect(await b.cluster.settleAbandoned(200, STOPPED)).toEqual([]);
      expect(await eventually(() => heard, (ids) => ids.includes(ofA), 5_000)).toContain(ofA);
    } finally {
      await stop();
    }
  });

  test("an instance that left with ids still pending has them settled by the next sweep", async () => {
    const id = crypto.randomUUID();
    await a.records.claim(id);
    await a.cluster.leave();
    expect(await b.cluster.settleAbandoned(60_000, STOPPED)).toEqual([id]);
  });
});
