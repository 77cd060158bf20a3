/**
 * Several provers sharing one PostgreSQL store. Each prover process is an instance with a heartbeat row;
 * a trigger NOTIFYs every request id that settles, so subscribers on any instance learn it at once; a
 * live instance settles the pending ids of an instance whose heartbeat stopped. Times come from the
 * database's clock, so the machines' clocks need not agree.
 */
import type { ErrorCode } from "../core/errors.ts";
import type { SqlDriver } from "./driver.ts";
import { PENDING, requestsTable } from "./proof-records.ts";

/** Milliseconds since the epoch on the database's clock. */
const DB_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

export interface ClusterStore {
  /** Creates or refreshes this instance's heartbeat row. */
  heartbeat(): Promise<void>;
  /**
   * Settles with `failure` the pending ids of every instance silent for more than `silentMs` (and of
   * instances that left without settling them), and forgets those instances. Returns the settled ids.
   * One statement: instances sweeping at once never settle an id twice.
   */
  settleAbandoned(silentMs: number, failure: { code: ErrorCode; message: string }): Promise<string[]>;
  /** Calls `onSettled` with every request id settled by any instance. Resolves once listening, with the stop function. */
  listen(onSettled: (requestId: string) => void): Promise<() => Promise<void>>;
  /** Removes this instance's row (a graceful stop, after its sessions are settled). */
  leave(): Promise<void>;
}

/** Sets up the instances table and the settle notification beside the request-id table of `messagesTable`. */
export async function openClusterStore(driver: SqlDriver, messagesTable: string, instanceId: string): Promise<ClusterStore> {
  const listen = driver.listen;
  if (driver.backend !== "postgres" || !listen) throw new Error("several provers can share a PostgreSQL store only");
  const requests = requestsTable(messagesTable);
  const instances = `${messagesTable}_instances`;
  const channel = `${requests}_settled`;
  await driver.setUp([
    `CREATE TABLE IF NOT EXISTS ${instances} (instance_id TEXT NOT NULL PRIMARY KEY, heartbeat_at BIGINT NOT NULL)`,
    `CREATE OR REPLACE FUNCTION ${requests}_notify() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN PERFORM pg_notify('${channel}', NEW.request_id); RETURN NULL; END $fn$`,
    // Delivered when the settling transaction commits: a listener reading the record then finds the proof.
    `CREATE OR REPLACE TRIGGER ${requests}_settled AFTER INSERT OR UPDATE OF state ON ${requests}
      FOR EACH ROW WHEN (NEW.state <> '${PENDING}') EXECUTE FUNCTION ${requests}_notify()`,
  ]);
  return {
    async heartbeat() {
      await driver.run({
        text: `INSERT INTO ${instances} (instance_id, heartbeat_at) VALUES ($1, ${DB_NOW_MS})
          ON CONFLICT (instance_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
        params: [instanceId],
      });
    },
    async settleAbandoned(silentMs, failure) {
      // The UPDATE sees the instances table as it was before the DELETE: the silent ones by `dead`, the
      // ones that left by NOT EXISTS.
      const rows = await driver.run<{ request_id: string }>({
        text: `WITH dead AS (DELETE FROM ${instances} WHERE heartbeat_at < ${DB_NOW_MS} - $1 AND instance_id <> $4 RETURNING instance_id)
          UPDATE ${requests} r SET state = 'error', error_code = $2, error_message = $3
          WHERE r.state = '${PENDING}' AND r.instance_id IS NOT NULL AND r.instance_id <> $4
            AND (r.instance_id IN (SELECT instance_id FROM dead)
              OR NOT EXISTS (SELECT 1 FROM ${instances} i WHERE i.instance_id = r.instance_id))
          RETURNING r.request_id`,
        params: [silentMs, failure.code, failure.message, instanceId],
      });
      return rows.map((row) => row.request_id);
    },
    listen: (onSettled) => listen(channel, onSettled),
    async leave() {
      await driver.run({ text: `DELETE FROM ${instances} WHERE instance_id = $1`, params: [instanceId] });
    },
  };
}
