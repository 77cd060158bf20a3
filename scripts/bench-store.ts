/**
 * Message store benchmark: the database read and written directly against the HTTP store on the same data.
 *   bun scripts/bench-store.ts [--messages N] (default 1,000,000) [--postgres]
 * SQLite by default: raw bun:sqlite beside the store's file. With --postgres: the store on PostgreSQL (PROVER_TEST_PG_URL's
 * server, or a throwaway cluster the tests' kit starts: fsync off there, for the raw side and the store alike), raw
 * reads and inserts through Bun's SQL client on tables of the run's own, dropped after; the full scan is left out.
 * The store server runs in a child process (one core each for server and client on a 2-core machine).
 * Reads use messages with a placeholder signature (reading never verifies); publishes are signed for real.
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Elysia } from "elysia";
import { errorHandling } from "../src/http/error-handling.ts";
import { createLogger } from "../src/base/log.ts";
import { DEFAULT_PROOF_STREAM, loadNodeKey, openStore, type RawMessage } from "../src/store/index.ts";
import { storeRoutes } from "../src/store/routes.ts";
import { SQLITE_FILE } from "../src/store/sqlite.ts";
import { storedMessageOf } from "../src/store/message.ts";
import { testPostgresUrl, withTestPostgres } from "../testkit/postgres.ts";

const STREAM = "bench";
const READ_REPEATS = 20;

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

/** Where the store keeps its messages: the SQLite file in the data folder, or a table of a PostgreSQL server. */
interface StoreAt {
  dataDir: string;
  url?: string;
  table?: string;
}

async function serve(at: StoreAt): Promise<void> {
  const store = await openStore(at);
  const app = new Elysia()
    .use(errorHandling(createLogger()))
    .use(storeRoutes({ store: store.messages, nodeKey: loadNodeKey(at.dataDir), proofStream: DEFAULT_PROOF_STREAM, places: { pages: 32, streams: 32, perClient: 64 }, publishQuota: { callerBytesPerMinute: Number.MAX_SAFE_INTEGER, streamBytes: Number.MAX_SAFE_INTEGER }, clientOf: () => "one client" }))
    .listen(0);
  console.log(`port ${app.server?.port}`);
}

const rate = (count: number, ms: number) => Math.round((count / ms) * 1000);
const fmt = (n: number) => n.toLocaleString("en-US");

async function timed<T>(work: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await work();
  return { ms: performance.now() - start, value };
}

async function fill(at: StoreAt, total: number): Promise<void> {
  const store = await openStore(at);
  const publisherId = `0x${"ab".repeat(20)}`;
  const signature = `0x${"cd".repeat(65)}`;
  const batch = 20_000;
  for (let start = 0; start < total; start += batch) {
    const rows = Array.from({ length: Math.min(batch, total - start) }, (_, k) => {
      const i = start + k;
      const timestamp = 1_700_000_000_000 + Math.floor(i / 4);
      const sequenceNumber = i % 4;
      const content = JSON.stringify({ i, url: "https://api.example.com/v1/prices?symbol=ETH", status: 200, price: 3000 + (i % 1000) / 10 });
      const raw: RawMessage = [32, [STREAM, 0, timestamp, sequenceNumber, publisherId, "bench"], i ? [1_700_000_000_000 + Math.floor((i - 1) / 4), (i - 1) % 4] : null, 27, 0, 0, null, content, null, 2, signature];
      return storedMessageOf(raw);
    });
    await store.messages.insert(rows);
  }
  await store.close();
}

async function startServer(at: StoreAt) {
  const child = Bun.spawn([process.execPath, import.meta.path, "--serve", JSON.stringify(at)], { stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  let output = "";
  while (!/port \d+\n/.test(output)) {
    const { value, done } = await reader.read();
    if (done) throw new Error("bench server exited");
    output += new TextDecoder().decode(value);
  }
  return { child, base: `http://127.0.0.1:${/port (\d+)/.exec(output)?.[1]}` };
}

async function median(repeats: number, work: () => Promise<unknown> | unknown): Promise<number> {
  await work(); // warm-up
  const times: number[] = [];
  for (let r = 0; r < repeats; r++) times.push((await timed(work)).ms);
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? 0;
}

/** The same database read and written without the store: the baseline each ratio is taken against. */
interface RawSide {
  /** The newest 5,000 messages' texts of one format (its column), oldest first; how many. */
  last(column: TextColumn): Promise<number> | number;
  /** Every message of the stream, oldest first, one at a time; how many (undefined: not measured here). */
  scan?(): number;
  /** `count` rows like a published message's, in one durable transaction. */
  insertBatch(count: number): Promise<void> | void;
  close(): Promise<void> | void;
}

/** The column each answer format's text is kept in. */
type TextColumn = "raw_json" | "object_json";

const LAST_SQL = (table: string, p: string, column: TextColumn) =>
  `SELECT ${column} FROM ${table} WHERE stream_id = ${p} AND partition = 0 ORDER BY ts DESC, sequence_no DESC, publisher_id DESC, msg_chain_id DESC LIMIT 5000`;
const RAW_TABLE = (table: string) =>
  `CREATE TABLE ${table} (stream_id TEXT, partition INTEGER, ts BIGINT, sequence_no BIGINT, publisher_id TEXT, msg_chain_id TEXT, payload TEXT, PRIMARY KEY (stream_id, partition, ts, sequence_no, publisher_id, msg_chain_id))`;
const RAW_SAMPLE = `[32,["pub",0,1700000000000,0,"0x${"ab".repeat(20)}","main"],[1700000000000,0],27,0,0,null,"{\\"i\\":1,\\"proof\\":\\"…\\"}",null,2,"0x${"cd".repeat(65)}"]`;

function sqliteRaw(dataDir: string): RawSide {
  const db = new Database(join(dataDir, SQLITE_FILE), { readonly: true });
  const lastSql = { raw_json: db.query<{ raw_json: string }, [string]>(LAST_SQL("messages", "?", "raw_json")), object_json: db.query<{ object_json: string }, [string]>(LAST_SQL("messages", "?", "object_json")) };
  const scanSql = db.query<{ raw_json: string }, [string]>("SELECT raw_json FROM messages WHERE stream_id = ? AND partition = 0 ORDER BY ts, sequence_no, publisher_id, msg_chain_id");
  const rawDb = new Database(join(dataDir, "raw-inserts.sqlite"), { create: true });
  rawDb.run("PRAGMA journal_mode = WAL");
  rawDb.run("PRAGMA synchronous = FULL");
  rawDb.run(`${RAW_TABLE("m")} WITHOUT ROWID`);
  const insert = rawDb.query("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  let seq = 0;
  const insertBatch = rawDb.transaction((n: number) => {
    for (let k = 0; k < n; k++) insert.run("pub", 0, 1_700_000_000_000, seq++, `0x${"ab".repeat(20)}`, "main", RAW_SAMPLE);
  });
  return {
    last: (column) => lastSql[column].all(STREAM).reverse().length,
    scan: () => {
      let count = 0;
      for (const _row of scanSql.iterate(STREAM)) count++;
      return count;
    },
    insertBatch,
    close: () => {
      db.close();
      rawDb.close();
    },
  };
}

async function postgresRaw(url: string, table: string): Promise<RawSide> {
  const sql = new SQL(url);
  const rawTable = `${table}_raw`;
  await sql.unsafe(RAW_TABLE(rawTable));
  // Statistics of the table just filled, as autovacuum would take them later: without, the planner expects a dozen rows
  // and sorts the whole stream for the raw read (about 75 ms), where the store's own statement walks the index.
  await sql.unsafe(`ANALYZE ${table}`);
  let seq = 0;
  return {
    last: async (column) => (await sql.unsafe(LAST_SQL(table, "$1", column), [STREAM])).reverse().length,
    insertBatch: (n) =>
      sql.begin(async (tx) => {
        for (let k = 0; k < n; k++) {
          await tx.unsafe(`INSERT INTO ${rawTable} VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, ["pub", 0, 1_700_000_000_000, seq++, `0x${"ab".repeat(20)}`, "main", RAW_SAMPLE]);
        }
      }),
    close: async () => {
      // The store's tables and the raw one: the server may be one other runs use.
      for (const name of [rawTable, `${table}_texts`, table]) await sql.unsafe(`DROP TABLE IF EXISTS ${name}`);
      await sql.close();
    },
  };
}

async function main(): Promise<void> {
  const total = Number(argument("--messages") ?? 1_000_000);
  if (!Number.isSafeInteger(total) || total < 10_000) throw new Error("--messages must be an integer ≥ 10000");
  const dataDir = mkdtempSync(join(tmpdir(), "tlsproof-bench-store-"));
  try {
    if (process.argv.includes("--postgres")) {
      await withTestPostgres(async () => {
        const at = { dataDir, url: await testPostgresUrl(), table: `bench_${process.pid}` };
        console.log(`Message store benchmark: ${fmt(total)} messages, PostgreSQL table ${at.table}, Bun ${Bun.version}`);
        await benchAt(at, total, () => postgresRaw(at.url, at.table));
      });
    } else {
      console.log(`Message store benchmark: ${fmt(total)} messages, SQLite in ${dataDir}, Bun ${Bun.version}`);
      await benchAt({ dataDir }, total, () => sqliteRaw(dataDir));
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function benchAt(at: StoreAt, total: number, openRaw: () => Promise<RawSide> | RawSide): Promise<void> {
  const filled = await timed(() => fill(at, total));
  console.log(`fill (store.insert, 20k per transaction): ${fmt(rate(total, filled.ms))} msg/s`);
  const raw = await openRaw();
  const server = await startServer(at);
  try {
    // Each format against a direct read of its own texts: an object answer is larger (about 1.8 times here).
    const httpLast = async (format: string) => median(READ_REPEATS, async () => (await fetch(`${server.base}/stores/${STREAM}/data/partitions/0/last?count=5000&format=${format}`)).text());
    const [rawTexts, objectTexts] = [await median(READ_REPEATS, () => raw.last("raw_json")), await median(READ_REPEATS, () => raw.last("object_json"))];
    const [rawFormatLast, objectLast] = [await httpLast("raw"), await httpLast("object")];
    console.log(`\nlast 5000 (medians of ${READ_REPEATS}): raw reads of raw_json ${rawTexts.toFixed(2)} ms, of object_json ${objectTexts.toFixed(2)} ms`);
    console.log(`  HTTP format=raw    ${rawFormatLast.toFixed(2)} ms  ratio ${(rawFormatLast / rawTexts).toFixed(2)}x (aim ≤ 2x)`);
    console.log(`  HTTP format=object ${objectLast.toFixed(2)} ms  ratio ${(objectLast / objectTexts).toFixed(2)}x (aim ≤ 2x)`);
    if (raw.scan) await benchScan(server, raw.scan);
    await benchPublish(server.base, raw);
  } finally {
    server.child.kill();
    await server.child.exited;
    await raw.close();
  }
}

async function benchScan(server: { base: string; child: { pid: number } }, rawScanOf: () => number): Promise<void> {
  const rawScan = await timed(rawScanOf);
  const sse = async (format: string) =>
    timed(async () => {
      const response = await fetch(`${server.base}/stores/${STREAM}/data/partitions/0/from?fromTimestamp=0&format=${format}`, { headers: { accept: "text/event-stream" } });
      let events = 0;
      let bytes = 0;
      const decoder = new TextDecoder();
      for await (const chunk of response.body ?? []) {
        bytes += chunk.length;
        events += decoder.decode(chunk, { stream: true }).split("\n\n").length - 1;
      }
      return { events, bytes };
    });
  const rssBefore = serverRss(server.child.pid);
  const sseRaw = await sse("raw");
  const rssAfter = serverRss(server.child.pid);
  const sseObject = await sse("object");
  const scanRate = rate(rawScan.value, rawScan.ms);
  console.log(`\nfull scan of ${fmt(rawScan.value)}: raw SQLite iterate ${fmt(scanRate)} msg/s`);
  console.log(`  SSE format=raw    ${fmt(rate(sseRaw.value.events - 1, sseRaw.ms))} msg/s  ratio 1/${(scanRate / rate(sseRaw.value.events - 1, sseRaw.ms)).toFixed(1)} (aim ≥ 1/10), ${fmt(Math.round(sseRaw.value.bytes / 1e6))} MB`);
  console.log(`  SSE format=object ${fmt(rate(sseObject.value.events - 1, sseObject.ms))} msg/s  ratio 1/${(scanRate / rate(sseObject.value.events - 1, sseObject.ms)).toFixed(1)} (aim ≥ 1/10)`);
  console.log(`  server RSS before/after the raw SSE stream: ${rssBefore} / ${rssAfter} MB`);
}

function serverRss(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  } catch {
    return 0;
  }
}

/** HTTP publishing (node signs each message) against raw durable inserts of the same kind of rows, same batch sizes. */
async function benchPublish(base: string, raw: RawSide): Promise<void> {
  console.log("\npublish (durable commits; HTTP includes the node's secp256k1 signature per message):");
  for (const [batchSize, requests] of [
    [100, 30],
    [1, 300],
  ] as const) {
    const count = batchSize * requests;
    const rawInserts = await timed(async () => {
      for (let r = 0; r < requests; r++) await raw.insertBatch(batchSize);
    });
    let n = 0;
    const http = await timed(async () => {
      for (let r = 0; r < requests; r++) {
        const body = JSON.stringify(Array.from({ length: batchSize }, () => ({ content: { i: n++, proof: "…" } })));
        const response = await fetch(`${base}/stores/pub-${batchSize}/data/partitions/0`, { method: "POST", body });
        if (response.status !== 200) throw new Error(`publish failed: ${response.status} ${await response.text()}`);
      }
    });
    const rawRate = rate(count, rawInserts.ms);
    const httpRate = rate(count, http.ms);
    console.log(`  ${batchSize} per request/transaction: raw inserts ${fmt(rawRate)} msg/s, HTTP ${fmt(httpRate)} msg/s, ratio 1/${(rawRate / httpRate).toFixed(1)} (aim ≥ 1/4)`);
  }
}

if (argument("--serve")) await serve(JSON.parse(argument("--serve") ?? "{}") as StoreAt);
else await main();
