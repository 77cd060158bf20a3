/**
 * The store's retention: at start and then periodically, what is older than the retention time is pruned: proofs
 * and outcome records (PROVER_STORE_RETENTION, ProofRecords.prune), and the messages of every other stream
 * (PROVER_STORE_MESSAGE_RETENTION, MessageStore.pruneMessages). One run at a time; a failed run is logged and
 * tried again at the next. With several provers sharing a PostgreSQL store each prunes: the statements are
 * idempotent, and a run finds little left after another's.
 */
import { toAppError } from "../core/errors.ts";
import type { Logger } from "../base/log.ts";
import type { ProofRecords } from "./proof-records.ts";
import type { MessageStore } from "./store.ts";

const HOUR_MS = 3_600_000;

/** How often to prune: a tenth of the retention time (so nothing outlives it by more), at most hourly. */
export const pruneIntervalMs = (retentionMs: number): number => Math.min(HOUR_MS, Math.max(1000, Math.floor(retentionMs / 10)));

export interface Retention {
  /** Stops the timer and waits for a run under way. */
  stop(): Promise<void>;
}

/** What one retention prunes: its counts by kind, and the log line that says it removed some. */
export interface Pruning {
  prune(before: number): Promise<Record<string, number>>;
  /** "old outcomes cleared and proofs deleted". */
  done: string;
}

/** The proofs and outcome records. */
export const proofPruning = (records: Pick<ProofRecords, "prune">): Pruning => ({
  prune: async (before) => ({ ...(await records.prune(before)) }),
  done: "old outcomes cleared and proofs deleted",
});

/** The messages of every stream but the proofs stream. */
export const messagePruning = (messages: Pick<MessageStore, "pruneMessages">, proofStream: string): Pruning => ({
  prune: async (before) => ({ messages: await messages.pruneMessages(before, proofStream) }),
  done: "old messages deleted",
});

export function startRetention(pruning: Pruning, retentionMs: number, log: Logger, everyMs = pruneIntervalMs(retentionMs)): Retention {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= (async () => {
      try {
        const pruned = await pruning.prune(Date.now() - retentionMs);
        if (Object.values(pruned).some((count) => count > 0)) log.info(`store retention: ${pruning.done}`, { ...pruned });
      } catch (error) {
        log.warn("store retention: pruning failed; trying again later", { error: toAppError(error).message });
      } finally {
        running = undefined;
      }
    })();
  };
  run();
  const timer = setInterval(run, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
