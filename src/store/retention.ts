/**
 * The store's retention (PROVER_STORE_RETENTION): at start and then periodically, the proofs and outcome records
 * older than the retention time are pruned (ProofRecords.prune). One run at a time; a failed run is logged and
 * tried again at the next. With several provers sharing a PostgreSQL store each prunes: the statements are
 * idempotent, and a run finds little left after another's.
 */
import { toAppError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { ProofRecords } from "./proof-records.ts";

const HOUR_MS = 3_600_000;

/** How often to prune: a tenth of the retention time (so nothing outlives it by more), at most hourly. */
export const pruneIntervalMs = (retentionMs: number): number => Math.min(HOUR_MS, Math.max(1000, Math.floor(retentionMs / 10)));

export interface Retention {
  /** Stops the timer and waits for a run under way. */
  stop(): Promise<void>;
}

export function startRetention(records: Pick<ProofRecords, "prune">, retentionMs: number, log: Logger, everyMs = pruneIntervalMs(retentionMs)): Retention {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= (async () => {
      try {
        const pruned = await records.prune(Date.now() - retentionMs);
        if (pruned.records > 0 || pruned.proofs > 0) log.info("store retention: old outcomes cleared and proofs deleted", { ...pruned });
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
