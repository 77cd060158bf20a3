/**
 * Where a proof's CPU goes: `bun scripts/session-cpu.ts [--clients C] [--proofs N]` (defaults 1 and 3) runs N proofs
 * of a 1 KB answer in 1024/1536 sessions set up on demand (no warm pool) through `cli prover start` with its
 * defaults, C clients at once, and sums the CPU time of the prover's and its engine hosts' threads by kind.
 * `--bare` measures N bare sessions of the same size instead (`scripts/bench-proof.ts --bare-only`: the engine
 * driven directly, prover and verifier in two processes). Threads are sampled from /proc every 200 ms: one that
 * ends between two samples loses at most its last 200 ms. Prints CPU seconds per proof by kind, and the cores
 * kept busy on average.
 */
import { readFileSync, readdirSync } from "node:fs";
import { cpus } from "node:os";
import { threadCpuSeconds } from "../testkit/process.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { firstEvent } from "../testkit/sse.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST, trustedIdentityFor } from "../testkit/tls-fixture.ts";
import { tlsFixture } from "../testkit/env.ts";

const argument = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
};
const clients = argument("--clients", 1);
const proofs = argument("--proofs", 3);
const bare = process.argv.includes("--bare");

/** Linux keeps a thread name's first 15 characters; WebKit gives it the last 15 of long ones. */
const KINDS: Record<string, string> = {
  "t Helper Thread": "wasm compiler (Wasm Worklist Helper Thread)",
  "bun.exe": "main thread",
  "web-spawn-worke": "engine threads (its pool and those each session starts)",
};

/** CPU seconds of every thread of these processes, by `pid:tid`, with the thread's name. */
function threadTimes(pids: number[]): Map<string, { name: string; seconds: number }> {
  const times = new Map<string, { name: string; seconds: number }>();
  for (const pid of pids) for (const [tid, time] of threadCpuSeconds(pid)) times.set(`${pid}:${tid}`, time);
  return times;
}

/** Samples the threads of `pids()` while `work` runs; CPU seconds by kind, and the run's wall time. */
async function measure(pids: () => number[], work: () => Promise<void>) {
  const before = threadTimes(pids());
  const seen = new Map(before);
  const sampler = setInterval(() => threadTimes(pids()).forEach((time, key) => seen.set(key, time)), 200);
  const started = performance.now();
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  const wallS = (performance.now() - started) / 1000;
  threadTimes(pids()).forEach((time, key) => seen.set(key, time));
  const byKind = new Map<string, number>();
  for (const [key, { name, seconds }] of seen) {
    const kind = KINDS[name] ?? "other";
    byKind.set(kind, (byKind.get(kind) ?? 0) + seconds - (before.get(key)?.seconds ?? 0));
  }
  return { byKind, wallS, threadsStarted: [...seen.keys()].filter((key) => !before.has(key)).length };
}

/** N proofs through `cli prover start`, `clients` at once: the prover process and its engine hosts. */
async function productProofs(): Promise<ReturnType<typeof measure>> {
  const target = startTarget(trustedIdentityFor(tlsFixture(), TARGET_HOST));
  const prover = await startProver(SOURCE_CLI, target.port!, { PROVER_POOL_SIZE: "0", PROVER_RESOLVE: `${TARGET_HOST}:${target.port}:127.0.0.1` });
  try {
    const pool = (await (await fetch(`${prover.url}/pool`)).json()) as { engineHosts: { hosts: { pid: number }[] } };
    const pids = [prover.process.pid, ...pool.engineHosts.hosts.map((h) => h.pid)];
    let left = proofs;
    const client = async () => {
      while (left-- > 0) {
        const requestId = crypto.randomUUID();
        const event = firstEvent(`${prover.url}/proof/${requestId}`, 300_000);
        const response = await fetch(`${prover.url}/proxy`, {
          headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/big?bytes=850`, "T-REQUEST-ID": requestId, "T-MAX-RECV-DATA": "1536" },
        });
        await response.text();
        if (response.status !== 200 || (await event).event !== "message") throw new Error(`a proof failed: /proxy ${response.status}`);
      }
    };
    return await measure(() => pids, () => Promise.all(Array.from({ length: clients }, client)).then(() => {}));
  } finally {
    await prover.stop();
    target.stop(true);
  }
}

/** The bare sessions' processes: bench-proof.ts's prover and verifier children (started as bare-engine.ts), whichever run now. */
function bareProcesses(): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return /bare-engine\.ts .*--bare-(prover|verifier)/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " "));
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function bareSessions(): Promise<ReturnType<typeof measure>> {
  const script = new URL("./bench-proof.ts", import.meta.url).pathname;
  return measure(bareProcesses, async () => {
    const child = Bun.spawn([process.execPath, script, "--bare-only", "--sizes", "1024/1536", "--runs", String(proofs)], { stdout: "ignore", stderr: "inherit" });
    if ((await child.exited) !== 0) throw new Error("the bare sessions failed");
  });
}

const { byKind, wallS, threadsStarted } = await (bare ? bareSessions() : productProofs());
const total = [...byKind.values()].reduce((a, b) => a + b, 0);
console.log(
  bare
    ? `${proofs} bare sessions one after another: ${wallS.toFixed(1)} s (the processes' start included), ${(wallS / proofs).toFixed(1)} s per session`
    : `${proofs} proofs, ${clients} client(s) at once: ${wallS.toFixed(1)} s, ${(wallS / proofs).toFixed(1)} s per proof`,
);
for (const [kind, seconds] of [...byKind].sort((a, b) => b[1] - a[1])) console.log(`  ${kind}: ${(seconds / proofs).toFixed(1)} CPU s per proof`);
console.log(`  all: ${(total / proofs).toFixed(1)} CPU s per proof; ${(total / wallS).toFixed(2)} of ${cpus().length} cores busy on average; ${threadsStarted} threads started`);
