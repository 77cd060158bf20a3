/** One suite, both backends: what ProofRecords promises, on the real databases. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import type { Proof } from "../../src/proof/format.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import { DEFAULT_PROOF_STREAM, loadNodeKey, openStore, publishEntries, type NodeKey, type ProofRecords, type RawMessage } from "../../src/store/index.ts";
import { isSignatureValid } from "../../src/store/message.ts";
import { signedSample } from "../proof/fixtures.ts";
import { backends, reopen, type OpenedStore } from "./backends.ts";

const SESSION_DIED = { code: "session_failed", message: "the prover restarted during the session" } as const;

/** Resolves with the current time once the clock has moved past it: what was written before is older. */
async function nextMillisecond(): Promise<number> {
  const now = Date.now();
  while (Date.now() <= now) await Bun.sleep(1);
  return Date.now();
}

for (const backend of backends) {
  describe(`ProofRecords on ${backend.name}`, () => {
    let opened: OpenedStore;
    let nodeKey: NodeKey;
    let records: ProofRecords;
    beforeEach(async () => {
      opened = await backend.open();
      nodeKey = loadNodeKey(opened.dataDir);
      records = await opened.handle.proofRecords(nodeKey, DEFAULT_PROOF_STREAM);
    });
    afterEach(() => opened.cleanup());

    /** The proofs stream as stored: RawMessages, oldest first. */
    const proofMessages = async (): Promise<RawMessage[]> => {
      const rows = await opened.store.read({ streamId: DEFAULT_PROOF_STREAM, partition: 0, limit: 100, texts: ["raw"] });
      return rows.map((row) => JSON.parse(row.raw ?? "") as RawMessage);
    };

    test("an id is claimed once, also after the store is closed and opened again", async () => {
      const id = crypto.randomUUID();
      const before = Date.now();
      expect(await records.claim(id)).toBe(true);
      expect(await records.claim(id)).toBe(false);
      const pending = await records.lookup(id);
      expect(pending.state).toBe("pending");
      expect(pending.state === "pending" && pending.claimedAt >= before && pending.claimedAt <= Date.now()).toBe(true);
      await reopen(opened);
      records = await opened.handle.proofRecords(nodeKey, DEFAULT_PROOF_STREAM);
      expect(await records.claim(id)).toBe(false);
      expect(await records.lookup(crypto.randomUUID())).toEqual({ state: "unknown" });
    });

    test("the key that made a request is kept with its id, also after the store is opened again", async () => {
      const [withKey, withoutKey] = [crypto.randomUUID(), crypto.randomUUID()];
      expect(await records.claim(withKey, "digest-of-key-a")).toBe(true);
      expect(await records.claim(withoutKey)).toBe(true);
      // A second claim of the id, with another key, neither takes it nor changes whose it is.
      expect(await records.claim(withKey, "digest-of-key-b")).toBe(false);
      await reopen(opened);
      records = await opened.handle.proofRecords(nodeKey, DEFAULT_PROOF_STREAM);
      expect(await records.requestedBy(withKey)).toBe("digest-of-key-a");
      expect(await records.requestedBy(withoutKey)).toBeUndefined();
      expect(await records.requestedBy(crypto.randomUUID())).toBeUndefined();
    });

    test("saveProof publishes the proof node-signed on the proofs stream and lookup reads it back from there", async () => {
      const { key, proof } = signedSample();
      const [first, second] = [crypto.randomUUID(), crypto.randomUUID()];
      await records.claim(first);
      await records.claim(second);
      await records.saveProof(first, proof);
      await records.saveProof(second, proof);

      const found = await records.lookup(first);
      expect(found).toEqual({ state: "settled", outcome: { event: "proof", proof } });
      if (found.state !== "settled" || found.outcome.event !== "proof") throw new Error("no proof");
      expect(verifyProof(found.outcome.proof, key.publicKeyPem).body.requestId).toBe(proof.body.requestId);

      const messages = await proofMessages();
      expect(messages).toHaveLength(2);
      expect(messages.every(isSignatureValid)).toBe(true);
      expect(messages.map((m) => m[1][4])).toEqual([nodeKey.address, nodeKey.address]);
      expect(JSON.parse(messages[0]![7]) as Proof).toEqual(proof);
      // The second proof continues the node's chain.
      expect(messages[1]![2]).toEqual([messages[0]![1][2], messages[0]![1][3]]);
    });

    test("the first outcome wins: a later save writes nothing, publishes nothing, and answers the recorded outcome", async () => {
      const id = crypto.randomUUID();
      const first = { event: "error", requestId: id, code: "target_request_failed", message: "the target answered 404" } as const;
      await records.claim(id);
      expect(await records.saveFailure(id, { code: first.code, message: first.message })).toEqual({ saved: true });
      expect(await records.saveFailure(id, { code: "session_failed", message: "later" })).toEqual({ saved: false, outcome: first });
      expect(await records.saveProof(id, signedSample().proof)).toEqual({ saved: false, outcome: first });
      expect(await records.lookup(id)).toEqual({ state: "settled", outcome: first });
      expect(await proofMessages()).toEqual([]);

      const proved = crypto.randomUUID();
      const { proof } = signedSample();
      await records.claim(proved);
      expect(await records.saveProof(proved, proof)).toEqual({ saved: true });
      expect(await records.saveFailure(proved, { code: "session_failed", message: "later" })).toEqual({ saved: false, outcome: { event: "proof", proof } });
    });

    test("an outcome saved for an id never claimed marks it used", async () => {
      const id = crypto.randomUUID();
      await records.saveFailure(id, { code: "invalid_header", message: "bad" });
      expect(await records.claim(id)).toBe(false);
      expect((await records.lookup(id)).state).toBe("settled");
    });

    test("failPending settles only the ids still pending", async () => {
      const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      for (const id of [a, b, c]) await records.claim(id);
      await records.saveProof(b, signedSample().proof);
      expect(await records.failPending(SESSION_DIED)).toBe(2);
      expect(await records.failPending(SESSION_DIED)).toBe(0);
      for (const id of [a, c]) expect(await records.lookup(id)).toEqual({ state: "settled", outcome: { event: "error", requestId: id, ...SESSION_DIED } });
      expect((await records.lookup(b)).state).toBe("settled");
    });

    test("prune: outcomes settled before the cut are cleared and their proofs deleted; ids stay used; newer, pending and other streams' data stay", async () => {
      const { proof } = signedSample();
      const [oldProof, oldFailure, pending] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      for (const id of [oldProof, oldFailure, pending]) await records.claim(id);
      await records.saveProof(oldProof, proof);
      await records.saveFailure(oldFailure, SESSION_DIED);
      // More records and proofs than one prune batch holds (200): failures, and proofs published straight to the proofs stream.
      for (let i = 0; i < 200; i++) await records.saveFailure(crypto.randomUUID(), SESSION_DIED);
      await publishEntries(opened.store, nodeKey, DEFAULT_PROOF_STREAM, 0, Array.from({ length: 1004 }, (_, n) => ({ content: { n } })));
      // And one message elsewhere.
      await publishEntries(opened.store, nodeKey, "other-stream", 0, [{ content: { kept: true } }]);
      const cut = await nextMillisecond();
      const recent = crypto.randomUUID();
      await records.claim(recent);
      await records.saveProof(recent, proof);

      expect(await records.prune(cut)).toEqual({ records: 202, proofs: 1005 });
      const expired = (requestId: string) =>
        ({
          state: "settled",
          outcome: { event: "error", requestId, code: "outcome_expired", message: "the outcome of this request id was deleted after the store's retention time (PROVER_STORE_RETENTION)" },
        }) as const;
      expect(await records.lookup(oldProof)).toEqual(expired(oldProof));
      expect(await records.lookup(oldFailure)).toEqual(expired(oldFailure));
      expect(await records.claim(oldProof)).toBe(false);
      expect((await records.lookup(pending)).state).toBe("pending");
      expect(await records.lookup(recent)).toEqual({ state: "settled", outcome: { event: "proof", proof } });
      expect((await proofMessages()).map((m) => JSON.parse(m[7]))).toEqual([proof]);
      expect(await opened.store.read({ streamId: "other-stream", partition: 0, limit: 10, texts: [] })).toHaveLength(1);
      // Settling an expired id later changes nothing; a second prune finds nothing.
      expect(await records.saveFailure(oldProof, SESSION_DIED)).toEqual({ saved: false, outcome: expired(oldProof).outcome });
      expect(await records.prune(cut)).toEqual({ records: 0, proofs: 0 });
    }, 60_000);

    test("a proof that cannot be stored is AppError storage_failed", async () => {
      const id = crypto.randomUUID();
      await records.claim(id);
      await opened.handle.close();
      const originalError = console.error;
      console.error = () => undefined;
      try {
        const failure = await records.saveProof(id, signedSample().proof).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(AppError);
        expect((failure as AppError).code).toBe("storage_failed");
      } finally {
        console.error = originalError;
      }
    });
  });
}

const postgres = backends.find((b) => b.name === "postgres");
describe("ProofRecords shared by two store handles on one PostgreSQL database", () => {
  let opened: OpenedStore;
  beforeEach(async () => {
    opened = await postgres!.open();
  });
  afterEach(() => opened.cleanup());

  test("claiming the same ids at the same time: exactly one handle wins each; outcomes are seen by both", async () => {
    const other = await openStore(opened.options);
    try {
      const [mine, theirs] = await Promise.all([
        opened.handle.proofRecords(loadNodeKey(opened.dataDir), DEFAULT_PROOF_STREAM),
        other.proofRecords(loadNodeKey(`${opened.dataDir}/other`), DEFAULT_PROOF_STREAM),
      ]);
      const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
      const results = await Promise.all(ids.flatMap((id) => [mine.claim(id), theirs.claim(id)]));
      for (let i = 0; i < ids.length; i++) expect([results[2 * i], results[2 * i + 1]].filter(Boolean)).toHaveLength(1);

      const { proof } = signedSample();
      await theirs.saveProof(ids[0]!, proof);
      expect(await mine.lookup(ids[0]!)).toEqual({ state: "settled", outcome: { event: "proof", proof } });
    } finally {
      await other.close();
    }
  });

  test("two provers sharing one node key (one data folder) save proofs at the same time: each id's record holds its own proof", async () => {
    const other = await openStore(opened.options);
    try {
      const nodeKey = loadNodeKey(opened.dataDir);
      const [mine, theirs] = await Promise.all([
        opened.handle.proofRecords(nodeKey, DEFAULT_PROOF_STREAM, "instance-a"),
        other.proofRecords(nodeKey, DEFAULT_PROOF_STREAM, "instance-b"),
      ]);
      const { proof } = signedSample();
      // A proof of its own per id: a record pointing at another id's message shows.
      const proofOf = (requestId: string): Proof => ({ ...proof, body: { ...proof.body, requestId } });
      const ids = Array.from({ length: 40 }, () => crypto.randomUUID());
      const handles = ids.map((_, i) => (i % 2 === 0 ? mine : theirs));
      await Promise.all(ids.map((id, i) => handles[i]!.claim(id)));
      const results = await Promise.all(ids.map((id, i) => handles[i]!.saveProof(id, proofOf(id))));
      expect(results.every((r) => r.saved)).toBe(true);
      for (const id of ids) expect(await mine.lookup(id)).toEqual({ state: "settled", outcome: { event: "proof", proof: proofOf(id) } });
      const stored = await opened.store.read({ streamId: DEFAULT_PROOF_STREAM, partition: 0, limit: 100, texts: [] });
      expect(stored).toHaveLength(ids.length);
      expect(new Set(stored.map((row) => row.msgChainId))).toEqual(new Set(["instance-a", "instance-b"]));
    } finally {
      await other.close();
    }
  });
});
