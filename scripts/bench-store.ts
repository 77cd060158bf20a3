/**
 * Message store benchmark: raw bun:sqlite against the HTTP store on the same SQLite data.
 *   bun scripts/bench-store.ts [--messages N] (default 1,000,000)
 * The store server runs in a child process (one core each for server and client on a 2-core machine).
 * Reads use messages with a placeholder signature (reading never verifies); publishes are signed for real.
 */
import { Database } from "bun:sqlite";
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

const STREAM = "bench";
const READ_REPEATS = 20;

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

async function serve(dataDir: string): Promise<void> {
  const store = await openStore({ dataDir });
  const app = new Elysia()
    .use(errorHandling(createLogger()))
    .use(storeRoutes({ store: store.messages, nodeKey: loadNodeKey(dataDir), proofStream: DEFAULT_PROOF_STREAM, places: { pages: 32, streams: 32, perClient: 64 }, publishQuota: { callerBytesPerMinute: Number.MAX_SAFE_INTEGER, streamBytes: Number.MAX_SAFE_INTEGER }, clientOf: () => "one client" }))
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

async function fill(dataDir: string, total: number): Promise<void> {
  const store = await openStore({ dataDir });
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

async function startServer(dataDir: string) {
  const child = Bun.spawn([process.execPath, import.meta.path, "--serve", dataDir], { stdout: "pipe", stderr: "inherit" });
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

async function main(): Promise<void> {
  const total = Number(argument("--messages") ?? 1_000_000);
  if (!Number.isSafeInteger(total) || total < 10_000) throw new Error("--messages must be an integer ≥ 10000");
  const dataDir = mkdtempSync(join(tmpdir(), "tlsproof-bench-store-"));
  console.log(`Message store benchmark: ${fmt(total)} messages, SQLite in ${dataDir}, Bun ${Bun.version}`);
  const filled = await timed(() => fill(dataDir, total));
  console.log(`fill (store.insert, 20k per transaction): ${fmt(rate(total, filled.ms))} msg/s`);

  const db = new Database(join(dataDir, SQLITE_FILE), { readonly: true });
  const server = await startServer(dataDir);
  try {
    const lastSql = db.query<{ raw_json: string }, [string]>(
      "SELECT raw_json FROM messages WHERE stream_id = ? AND partition = 0 ORDER BY ts DESC, sequence_no DESC, publisher_id DESC, msg_chain_id DESC LIMIT 5000",
    );
    const rawLast = await median(READ_REPEATS, () => lastSql.all(STREAM).reverse().length);
    const httpLast = async (format: string) => median(READ_REPEATS, async () => (await fetch(`${server.base}/stores/${STREAM}/data/partitions/0/last?count=5000&format=${format}`)).text());
    const objectLast = await httpLast("object");
    const rawFormatLast = await httpLast("raw");
    console.log(`\nlast 5000 (median of ${READ_REPEATS}): raw SQLite ${rawLast.toFixed(2)} ms`);
    console.log(`  HTTP format=raw    ${rawFormatLast.toFixed(2)} ms  ratio ${(rawFormatLast / rawLast).toFixed(2)}x (aim ≤ 5x)`);
    console.log(`  HTTP format=object ${objectLast.toFixed(2)} ms  ratio ${(objectLast / rawLast).toFixed(2)}x (aim ≤ 5x)`);

    const scanSql = db.query<{ raw_json: string }, [string]>("SELECT raw_json FROM messages WHERE stream_id = ? AND partition = 0 ORDER BY ts, sequence_no, publisher_id, msg_chain_id");
    const rawScan = await timed(() => {
      let count = 0;
      for (const _row of scanSql.iterate(STREAM)) count++;
      return count;
    });
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

    await benchPublish(server.base, dataDir);
  } finally {
    server.child.kill();
    db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
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
async function benchPublish(base: string, dataDir: string): Promise<void> {
  const rawDb = new Database(join(dataDir, "raw-inserts.sqlite"), { create: true });
  rawDb.run("PRAGMA journal_mode = WAL");
  rawDb.run("PRAGMA synchronous = FULL");
  rawDb.run("CREATE TABLE m (stream_id TEXT, partition INTEGER, ts BIGINT, sequence_no BIGINT, publisher_id TEXT, msg_chain_id TEXT, payload TEXT, PRIMARY KEY (stream_id, partition, ts, sequence_no, publisher_id, msg_chain_id)) WITHOUT ROWID");
  const insert = rawDb.query("INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  const sample = `[32,["pub",0,1700000000000,0,"0x${"ab".repeat(20)}","main"],[1700000000000,0],27,0,0,null,"{\\"i\\":1,\\"proof\\":\\"…\\"}",null,2,"0x${"cd".repeat(65)}"]`;
  let seq = 0;
  const insertBatch = rawDb.transaction((n: number) => {
    for (let k = 0; k < n; k++) insert.run("pub", 0, 1_700_000_000_000, seq++, `0x${"ab".repeat(20)}`, "main", sample);
  });

  console.log("\npublish (durable commits; HTTP includes the node's secp256k1 signature per message):");
  for (const [batchSize, requests] of [
    [100, 30],
    [1, 300],
  ] as const) {
    const count = batchSize * requests;
    const raw = await timed(() => {
      for (let r = 0; r < requests; r++) insertBatch(batchSize);
    });
    let n = 0;
    const http = await timed(async () => {
      for (let r = 0; r < requests; r++) {
        const body = JSON.stringify(Array.from({ length: batchSize }, () => ({ content: { i: n++, proof: "…" } })));
        const response = await fetch(`${base}/stores/pub-${batchSize}/data/partitions/0`, { method: "POST", body });
        if (response.status !== 200) throw new Error(`publish failed: ${response.status} ${await response.text()}`);
      }
    });
    const rawRate = rate(count, raw.ms);
    const httpRate = rate(count, http.ms);
    console.log(`  ${batchSize} per request/transaction: raw inserts ${fmt(rawRate)} msg/s, HTTP ${fmt(httpRate)} msg/s, ratio 1/${(rawRate / httpRate).toFixed(1)} (aim ≥ 1/4)`);
  }
  rawDb.close();
}

if (argument("--serve")) await serve(argument("--serve") ?? "");
else await main();
