/**
 * The message store's memory under large messages and hostile readers: one `cli prover start` (keys off, the
 * default; SQLite store), `--messages` messages of `--bytes` bytes published to one stream, then
 *   1. one plain `last?count=5000` query,
 *   2. three at once,
 *   3. `--readers` SSE readers of `last?count=5000` that read their first bytes and then never read again,
 *      held for `--hold` seconds (beyond those the prover allows, each refused 503).
 * Prints the prover process's resident memory (VmRSS) after each step and its peak (VmHWM), against the bounds of
 * the store's issue (300 MB after the queries, 500 MB with the stalled readers), and what each answer held.
 * Usage: bun scripts/bench-store-memory.ts [--messages 150] [--bytes 1000000] [--readers 32] [--hold 5]
 */
import { connect, type Socket } from "node:net";
import { readFileSync } from "node:fs";
import { tlsFixture } from "../testkit/env.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { startTarget } from "../testkit/target.ts";

const MB = 1_000_000;
function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}
const MESSAGES = option("messages", 150);
const BYTES = option("bytes", 1_000_000);
const READERS = option("readers", 32);
const HOLD_S = option("hold", 5);

function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

const target = startTarget(tlsFixture());
// Readers beyond the defaults' places would only be refused: the prover is given room for all of them.
const prover = await startProver(SOURCE_CLI, target.port!, {
  PROVER_STORE_STREAMS: String(READERS),
  PROVER_STORE_PER_CLIENT: String(READERS + 4),
  // The messages are published as fast as the prover takes them: more than a caller may in a minute by default.
  PROVER_STORE_PUBLISH_BYTES_PER_MIN: String(4 * MESSAGES * BYTES),
});
const pid = prover.process.pid;
const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
const line = (what: string) => {
  const { rss, peak } = memoryOf(pid);
  console.log(`${what.padEnd(52)} RSS ${mb(rss).padStart(7)}  peak ${mb(peak).padStart(7)}`);
  return rss;
};
try {
  line("prover started");
  const stream = `${prover.url}/stores/bench-memory/data/partitions/0`;
  for (let i = 0; i < MESSAGES; i++) {
    const published = await fetch(stream, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: { i, pad: "x".repeat(BYTES) } }) });
    if (published.status !== 200) throw new Error(`publish ${i}: ${published.status} ${await published.text()}`);
  }
  line(`${MESSAGES} messages of ${mb(BYTES)} published`);

  const query = async () => {
    const answer = await fetch(`${stream}/last?count=5000`);
    const text = await answer.text();
    const { metadata } = JSON.parse(text) as { metadata: { hasNext: boolean; totalMessages: number } };
    return `${answer.status}, ${metadata.totalMessages} messages, ${mb(text.length)}, hasNext ${metadata.hasNext}`;
  };
  console.log(`one last?count=5000: ${await query()}`);
  const afterOne = line("after one plain query");
  console.log(`three at once: ${(await Promise.all([query(), query(), query()])).join(" | ")}`);
  const afterThree = line("after three plain queries at once");

  // Readers that take the status line and then stop reading: the socket's buffers fill and stay full.
  const sockets: Socket[] = [];
  const statuses = await Promise.all(
    Array.from({ length: READERS }, () =>
      new Promise<string>((resolve, reject) => {
        const { hostname, port } = new URL(prover.url);
        const socket = connect(Number(port), hostname, () =>
          socket.write(`GET /stores/bench-memory/data/partitions/0/last?count=5000 HTTP/1.1\r\nHost: ${hostname}\r\nAccept: text/event-stream\r\n\r\n`),
        );
        sockets.push(socket);
        socket.once("data", (chunk: Buffer) => {
          socket.pause();
          resolve(chunk.toString("latin1").split("\r\n", 1)[0] ?? "");
        });
        socket.on("error", reject);
      }),
    ),
  );
  const counted = statuses.reduce<Record<string, number>>((counts, status) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {});
  console.log(`${READERS} SSE readers that stopped reading: ${JSON.stringify(counted)}`);
  await Bun.sleep(HOLD_S * 1000);
  const stalled = line(`with ${READERS} stalled SSE readers, after ${HOLD_S} s`);
  for (const socket of sockets) socket.destroy();
  await Bun.sleep(1000);
  line("readers gone");
  const verdict = (rss: number, bound: number) => `${mb(rss)} of ${mb(bound)}: ${(rss / bound).toFixed(2)} of the bound`;
  console.log(`bound, one query: ${verdict(afterOne, 300 * MB)}; three: ${verdict(afterThree, 300 * MB)}; stalled readers: ${verdict(stalled, 500 * MB)}`);
} finally {
  await prover.stop();
  target.stop(true);
}
