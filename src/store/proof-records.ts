/**
 * Request ids and their outcomes, kept in the message store's database: a request id is single use for
 * ever (across restarts, and across every prover sharing a PostgreSQL database), and every outcome stays
 * reachable by its id. A proof is a message of the proofs stream; the record points at it by its key.
 */
import { AppError, type ErrorCode, isErrorCode } from "../core/errors.ts";
import type { DeliveredProof } from "../proof/quorum.ts";
import type { ProofOutcome } from "../proof/outcome.ts";
import type { SqlDriver, SqlRun, SqlValue } from "./driver.ts";
import type { RawMessage } from "./message.ts";
import type { NodeKey } from "./node-key.ts";
import { publishEntries } from "./publish.ts";
import { type SqlMessageStore, inBatches, pruneInBatches } from "./sql-store.ts";
import { PRUNE_BATCH, pruneStreamSql, textColumn } from "./sql.ts";

export type RecordedOutcome =
  | { state: "unknown" }
  | { state: "pending"; claimedAt: number }
  | { state: "settled"; outcome: ProofOutcome };

/**
 * What a save left in the store. The first recorded outcome of an id wins: a save onto an id already settled
 * writes nothing and answers the outcome the id had, which is the one to deliver.
 */
export type SaveResult = { saved: true } | { saved: false; outcome: ProofOutcome };

export interface ProofRecords {
  /**
   * Marks the id used; false when it was used before (by this or any process sharing the database).
   * `requestedBy`: the digest of the API key that made the request, kept with the id (scoped keys read only
   * the proofs of their own requests).
   */
  claim(requestId: string, requestedBy?: string): Promise<boolean>;
  /** The digest of the API key that made the request; undefined for an id not claimed, or claimed without a key. */
  requestedBy(requestId: string): Promise<string | undefined>;
  /**
   * Publishes the proof to the proofs stream (node-signed, on this handle's own chain) and records it as the
   * id's outcome, in one transaction. Throws AppError `storage_failed` when it could not be stored.
   */
  saveProof(requestId: string, proof: DeliveredProof): Promise<SaveResult>;
  /** Records that no proof will come for this id. */
  saveFailure(requestId: string, failure: { code: ErrorCode; message: string }): Promise<SaveResult>;
  /** The id's state, read by primary key (no scan). */
  lookup(requestId: string): Promise<RecordedOutcome>;
  /** Settles every id still pending with this failure (a restarted single prover: those sessions died with it). Returns how many. */
  failPending(failure: { code: ErrorCode; message: string }): Promise<number>;
  /**
   * Retention: clears the outcomes of the ids claimed before `before` (ms since the epoch), then deletes the
   * proofs published before it. Each id stays used (single use for ever) and reads as `outcome_expired`.
   */
  prune(before: number): Promise<PruneResult>;
}

/** What a prune removed. */
export interface PruneResult {
  /** Outcome records cleared. */
  records: number;
  /** Proof messages deleted. */
  proofs: number;
}

export const PENDING = "pending";

/** The request-id table beside a messages table. */
export const requestsTable = (messagesTable: string): string => `${messagesTable}_requests`;
/** Which API key (its digest) made each request: a table of its own, so older databases need no migration. */
const requestKeysTable = (messagesTable: string): string => `${requestsTable(messagesTable)}_keys`;
/** An outcome cleared by retention: the id stays used, its outcome is gone. */
const EXPIRED = "expired";
type RecordState = typeof PENDING | "proof" | "error" | typeof EXPIRED;

interface RecordRow {
  state: RecordState;
  claimed_at: number | string;
  error_code: string | null;
  error_message: string | null;
  raw_json: string | null;
}

/** Columns of a settled record, in the order of `settleSql`'s placeholders after request_id and claimed_at. */
const SETTLED_COLUMNS = ["state", "stream_id", "partition", "ts", "sequence_no", "publisher_id", "msg_chain_id", "error_code", "error_message"] as const;
type SettledValues = { [K in (typeof SETTLED_COLUMNS)[number]]: SqlValue };

const noMessage = { stream_id: null, partition: null, ts: null, sequence_no: null, publisher_id: null, msg_chain_id: null };

/** Raised inside a transaction to roll it back when the id already has an outcome. */
class AlreadySettled extends Error {}

/**
 * ProofRecords in the store's database: table `<messages table>_requests`, keyed by request id. A claim is an
 * INSERT … ON CONFLICT DO NOTHING, so the database, not this process, decides who used an id first.
 */
export class SqlProofRecords implements ProofRecords {
  private readonly table: string;
  /**
   * The message chain this handle publishes proofs into: its instance's id, else its own random one. Two
   * provers sharing a node key (one data folder) then never compute the same message id.
   */
  private readonly msgChainId: string;

  private constructor(
    private readonly driver: SqlDriver,
    private readonly messages: SqlMessageStore,
    private readonly nodeKey: NodeKey,
    private readonly proofStream: string,
    private readonly instanceId: string | undefined,
  ) {
    this.table = requestsTable(messages.table);
    this.msgChainId = instanceId ?? crypto.randomUUID();
  }

  /**
   * `instanceId`: the prover process claiming ids, recorded with each claim so that another instance can
   * settle the ids of one that died (src/store/cluster.ts; PostgreSQL only).
   */
  static async open(driver: SqlDriver, messages: SqlMessageStore, nodeKey: NodeKey, proofStream: string, instanceId?: string): Promise<SqlProofRecords> {
    const records = new SqlProofRecords(driver, messages, nodeKey, proofStream, instanceId);
    const t = records.table;
    await driver.setUp([
      `CREATE TABLE IF NOT EXISTS ${t} (
        request_id TEXT NOT NULL PRIMARY KEY,
        claimed_at BIGINT NOT NULL,
        state TEXT NOT NULL,
        stream_id TEXT, partition INTEGER, ts BIGINT, sequence_no BIGINT, publisher_id TEXT, msg_chain_id TEXT,
        error_code TEXT, error_message TEXT, instance_id TEXT
      ) ${driver.keyedTableSuffix}`,
      `CREATE TABLE IF NOT EXISTS ${requestKeysTable(messages.table)} (
        request_id TEXT NOT NULL PRIMARY KEY, key_digest TEXT NOT NULL
      ) ${driver.keyedTableSuffix}`,
      // failPending reads only the pending few, not the whole history.
      `CREATE INDEX IF NOT EXISTS ${t}_pending ON ${t} (request_id) WHERE state = '${PENDING}'`,
      // prune finds the oldest settled records without a scan.
      `CREATE INDEX IF NOT EXISTS ${t}_claimed ON ${t} (claimed_at)`,
      // Tables made before instance ids existed (SQLite never records one: its store has a single prover).
      ...(driver.backend === "postgres" ? [`ALTER TABLE ${t} ADD COLUMN IF NOT EXISTS instance_id TEXT`] : []),
    ]);
    return records;
  }

  async claim(requestId: string, requestedBy?: string): Promise<boolean> {
    const owned = this.instanceId !== undefined;
    const insert = {
      text: `INSERT INTO ${this.table} (request_id, claimed_at, state${owned ? ", instance_id" : ""})
        VALUES ($1, $2, '${PENDING}'${owned ? ", $3" : ""}) ON CONFLICT DO NOTHING RETURNING request_id`,
      params: owned ? [requestId, Date.now(), this.instanceId!] : [requestId, Date.now()],
    };
    if (requestedBy === undefined) return (await this.driver.run(insert)).length === 1;
    // The id and its key together: no moment where the id is claimed and its key unknown.
    return this.driver.transaction(async (run) => {
      if ((await run(insert)).length !== 1) return false;
      await run({ text: `INSERT INTO ${requestKeysTable(this.messages.table)} (request_id, key_digest) VALUES ($1, $2)`, params: [requestId, requestedBy] });
      return true;
    });
  }

  async requestedBy(requestId: string): Promise<string | undefined> {
    const [row] = await this.driver.run<{ key_digest: string }>({
      text: `SELECT key_digest FROM ${requestKeysTable(this.messages.table)} WHERE request_id = $1`,
      params: [requestId],
    });
    return row?.key_digest;
  }

  async saveProof(requestId: string, proof: DeliveredProof): Promise<SaveResult> {
    try {
      await publishEntries(this.messages, this.nodeKey, this.proofStream, 0, [{ content: proof, msgChainId: this.msgChainId }], (stored, mustBeNew) =>
        this.driver.transaction(async (run) => {
          const [message] = stored;
          if (!message) throw new AppError("internal", "no message to store");
          const { id } = message;
          const key = { stream_id: id.streamId, partition: id.streamPartition, ts: id.timestamp, sequence_no: id.sequenceNumber, publisher_id: id.publisherId, msg_chain_id: id.msgChainId };
          if (!(await this.settle(run, requestId, { state: "proof", ...key, error_code: null, error_message: null }))) throw new AlreadySettled();
          // A message already stored under this id is another's (the record would point at the wrong proof): it throws.
          return this.messages.insertWith(run, stored, mustBeNew);
        }),
      );
      return { saved: true };
    } catch (error) {
      if (error instanceof AlreadySettled) return this.settledOutcome(requestId);
      console.error("store: a proof could not be stored", error);
      throw new AppError("storage_failed", "the proof could not be stored");
    }
  }

  async saveFailure(requestId: string, failure: { code: ErrorCode; message: string }): Promise<SaveResult> {
    const saved = await this.settle(this.driver.run, requestId, { state: "error", ...noMessage, error_code: failure.code, error_message: failure.message });
    return saved ? { saved: true } : this.settledOutcome(requestId);
  }

  /** The outcome of an id a save found settled. */
  private async settledOutcome(requestId: string): Promise<SaveResult> {
    const recorded = await this.lookup(requestId);
    if (recorded.state !== "settled") throw new AppError("storage_failed", `the outcome of ${requestId} was not written and none is recorded`);
    return { saved: false, outcome: recorded.outcome };
  }

  /** Records the outcome unless the id already has one (an id never claimed is recorded as used too); true when written. */
  private async settle(run: SqlRun, requestId: string, values: SettledValues): Promise<boolean> {
    const columns = ["request_id", "claimed_at", ...SETTLED_COLUMNS];
    const updates = SETTLED_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ");
    const rows = await run({
      text: `INSERT INTO ${this.table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")})
        ON CONFLICT (request_id) DO UPDATE SET ${updates} WHERE ${this.table}.state = '${PENDING}' RETURNING request_id`,
      params: [requestId, Date.now(), ...SETTLED_COLUMNS.map((c) => values[c])],
    });
    return rows.length === 1;
  }

  async lookup(requestId: string): Promise<RecordedOutcome> {
    const m = this.messages.table;
    const [row] = await this.driver.run<RecordRow>({
      text: `SELECT r.state, r.claimed_at, r.error_code, r.error_message, ${textColumn(m, "raw")} FROM ${this.table} r
        LEFT JOIN ${m} m ON m.stream_id = r.stream_id AND m.partition = r.partition AND m.ts = r.ts
          AND m.sequence_no = r.sequence_no AND m.publisher_id = r.publisher_id AND m.msg_chain_id = r.msg_chain_id
        WHERE r.request_id = $1`,
      params: [requestId],
    });
    if (!row) return { state: "unknown" };
    if (row.state === PENDING) return { state: "pending", claimedAt: Number(row.claimed_at) };
    if (row.state === EXPIRED) {
      const expired = new AppError("outcome_expired", "the outcome of this request id was deleted after the store's retention time (PROVER_STORE_RETENTION)");
      return { state: "settled", outcome: { event: "error", requestId, code: expired.code, message: expired.message } };
    }
    if (row.state === "proof") {
      if (row.raw_json === null) throw new AppError("storage_failed", `the proof of ${requestId} is missing from the store`);
      const raw = JSON.parse(row.raw_json) as RawMessage;
      return { state: "settled", outcome: { event: "proof", proof: JSON.parse(raw[7]) as DeliveredProof } };
    }
    const code = row.error_code !== null && isErrorCode(row.error_code) ? row.error_code : "internal";
    return { state: "settled", outcome: { event: "error", requestId, code, message: row.error_message ?? "" } };
  }

  async prune(before: number): Promise<PruneResult> {
    const cleared = SETTLED_COLUMNS.filter((c) => c !== "state").map((c) => `${c} = NULL`);
    // Records first: a record never points at a deleted proof (a proof's record was claimed before it was published).
    const records = await inBatches(this.driver, {
      text: `UPDATE ${this.table} SET state = '${EXPIRED}', ${cleared.join(", ")}
        WHERE request_id IN (SELECT request_id FROM ${this.table} WHERE claimed_at < $1 AND state IN ('proof', 'error') LIMIT ${PRUNE_BATCH})
        RETURNING request_id`,
      params: [before],
    });
    const proofs = await pruneInBatches(this.driver, this.messages.table, pruneStreamSql(this.messages.table, this.proofStream, 0, before));
    return { records, proofs };
  }

  async failPending(failure: { code: ErrorCode; message: string }): Promise<number> {
    const rows = await this.driver.run({
      text: `UPDATE ${this.table} SET state = 'error', error_code = $1, error_message = $2 WHERE state = '${PENDING}' RETURNING request_id`,
      params: [failure.code, failure.message],
    });
    return rows.length;
  }
}
