/** Store reads and writes counted by wrapping the two store interfaces the prover uses. */
import type { MessageStore } from "../store/store.ts";
import type { ProofRecords } from "../store/proof-records.ts";
import type { ProverMetrics } from "./prover.ts";

type Operation = "read" | "write";

function counter(metrics: ProverMetrics) {
  return async <T>(operation: Operation, kind: string, pending: Promise<T>): Promise<T> => {
    try {
      const value = await pending;
      metrics.storeOperations.inc({ operation, kind, result: "ok" });
      return value;
    } catch (error) {
      metrics.storeOperations.inc({ operation, kind, result: "error" });
      throw error;
    }
  };
}

/**
 * Also counts settled request ids: every outcome is recorded here before anyone is told of it (a proof is
 * counted once stored, a failure once stored or when its recording failed; a save onto an id already settled
 * counts nothing).
 */
export function countedProofRecords(records: ProofRecords, metrics: ProverMetrics): ProofRecords {
  const count = counter(metrics);
  return {
    claim: (requestId, requestedBy) => count("write", "claim", records.claim(requestId, requestedBy)),
    requestedBy: (requestId) => count("read", "requested_by", records.requestedBy(requestId)),
    saveProof: async (requestId, proof) => {
      const result = await count("write", "save_proof", records.saveProof(requestId, proof));
      if (result.saved) metrics.settled("proof");
      return result;
    },
    saveFailure: async (requestId, failure) => {
      try {
        const result = await count("write", "save_failure", records.saveFailure(requestId, failure));
        if (result.saved) metrics.settled(failure.code);
        return result;
      } catch (error) {
        metrics.settled(failure.code);
        throw error;
      }
    },
    lookup: (requestId) => count("read", "lookup", records.lookup(requestId)),
    failPending: (failure) => count("write", "fail_pending", records.failPending(failure)),
    prune: (before) => count("write", "prune", records.prune(before)),
  };
}

export function countedMessageStore(store: MessageStore, metrics: ProverMetrics): MessageStore {
  const count = counter(metrics);
  return {
    backend: store.backend,
    insert: (messages, mustBeNew) => count("write", "publish", store.insert(messages, mustBeNew)),
    read: (request) => count("read", "query", store.read(request)),
    nthNewestKey: (streamId, partition, n) => count("read", "query", store.nthNewestKey(streamId, partition, n)),
    chainHead: (streamId, partition, publisherId, msgChainId) => count("read", "chain_head", store.chainHead(streamId, partition, publisherId, msgChainId)),
    streamBytes: (streamId) => count("read", "stream_bytes", store.streamBytes(streamId)),
    pruneMessages: (before, kept) => count("write", "prune_messages", store.pruneMessages(before, kept)),
  };
}
