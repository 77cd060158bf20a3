/**
 * What the notary's ledger (src/notary/ledger.ts) adds to each attestation: records of fresh request ids into a
 * SQLite ledger (WAL, synchronous=FULL: each one on disk before the proof is signed), one after another, as one
 * notary makes them.
 *   bun scripts/bench-ledger.ts [--records N] (default 2000)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLedger } from "../src/notary/ledger.ts";

const at = process.argv.indexOf("--records");
const records = at > 0 ? Number(process.argv[at + 1]) : 2000;
const dir = mkdtempSync(join(tmpdir(), "tlsproof-bench-ledger-"));
try {
  const ledger = await openLedger({ kind: "sqlite", path: join(dir, "notary-ledger.sqlite") }, "sha256:bench");
  const times: number[] = [];
  for (let i = 0; i < records; i++) {
    const started = performance.now();
    await ledger.record(crypto.randomUUID());
    times.push(performance.now() - started);
  }
  await ledger.close();
  times.sort((a, b) => a - b);
  const pick = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(3);
  console.log(`ledger records: ${records}; per record: median ${pick(0.5)} ms, p95 ${pick(0.95)} ms, max ${pick(1)} ms`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
