/**
 * This prover as one instance of several sharing a PostgreSQL store: it heartbeats, hears every id any
 * instance settles (NOTIFY) and wakes its own subscribers, and settles the pending ids of instances that
 * stopped heartbeating. A subscriber to an id of a dead instance gets `session_failed` within the timeout
 * plus one sweep interval (a third of it) plus the notification.
 */
import { toAppError } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import type { ClusterStore } from "../../store/index.ts";

export interface InstancePresence {
  /**
   * Heartbeats now unless one succeeded within half the timeout. Called before claiming an id: an instance
   * the others declared dead (its database link stalled or dropped) is listed again before it claims, so no
   * live instance settles the new id as abandoned. Throws when the heartbeat fails.
   */
  confirmAlive(): Promise<void>;
  /** Stops heartbeating and listening, and leaves (ids still pending are then settled by the others). */
  stop(): Promise<void>;
}

const ABANDONED = { code: "session_failed", message: "the prover running this session stopped" } as const;

/** `onSettled` gets every request id any instance settles. */
export async function joinCluster(cluster: ClusterStore, onSettled: (requestId: string) => void, timeoutMs: number, log: Logger): Promise<InstancePresence> {
  let lastBeatAt = -Infinity;
  const heartbeat = async () => {
    const started = performance.now();
    await cluster.heartbeat();
    lastBeatAt = Math.max(lastBeatAt, started);
  };
  await heartbeat();
  const stopListening = await cluster.listen(onSettled);
  let beating = false;
  const beat = async () => {
    if (beating) return;
    beating = true;
    try {
      await heartbeat();
      const settled = await cluster.settleAbandoned(timeoutMs, ABANDONED);
      if (settled.length > 0) log.warn("request ids of a stopped prover settled as failed", { count: settled.length });
    } catch (error) {
      log.warn("cluster heartbeat failed", { error: toAppError(error).message });
    } finally {
      beating = false;
    }
  };
  const timer = setInterval(() => void beat(), Math.max(500, Math.floor(timeoutMs / 3)));
  return {
    async confirmAlive() {
      if (performance.now() - lastBeatAt > timeoutMs / 2) await heartbeat();
    },
    async stop() {
      clearInterval(timer);
      await stopListening().catch(() => undefined);
      await cluster.leave().catch((error: unknown) => log.warn("leaving the cluster failed", { error: toAppError(error).message }));
    },
  };
}
