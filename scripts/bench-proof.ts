/**
 * Proof pipeline benchmark: the bare engine against the product, same local TLS target, same session sizes.
 *   bun scripts/bench-proof.ts [--runs N] (default 3)
 * 1. bare engine: tlsn-wasm setup + request + reveal + verify, driven directly. The prover and the verifier
 *    are two child processes; the verifier process accepts the prover's MPC socket and relays it to its
 *    own Verifier (both wasm sides are WebSocket clients). No HTTP server, notary, pool or signing. Their
 *    threads start from the product's worker entry (scripts/bare-engine.ts), not tlsn-wasm's own snippet.
 * 2. cold proof: `cli prover start` with PROVER_POOL_SIZE=0, `/proxy` call to the proof event.
 * 3. warm proof: PROVER_POOL_SIZE=1 with the target host warm; each run waits for a ready session.
 * 4. `cli verify` of a proof from step 3 (a fresh process each time).
 * 5. the sized-session measurements (scripts/bench-sized.ts): --mixed-s S (default 600), --mix-seed N (the
 *    mix's arrivals and origins; default random, printed), --throughput-n N (default 12); --sized-only runs only
 *    these, and --only cold,mixed,floor,atonce,throughput,memory some of them (the mix's floor: each of its requests
 *    warm and alone; atonce: warm requests arriving 1, 2 and 3 together). `PROVER_*` variables set for the bench reach every prover it starts (an A/B of one setting).
 * 6. proxy mode (scripts/bench-proxy.ts): /proxy latency against a plain HTTPS GET, the proof event after the
 *    answer, sustained proofs per second, a 1 MB answer; --proxy-only runs only this part, and --soak N adds a soak of
 *    N proofs (delivered once, stored, memory flat); --soak-notary N the same soak against a standalone `cli notary
 *    start` (the prover's memory and the notary's, each in its own process), alone unless --soak is given too.
 * --bare-only runs step 1 alone with --sizes S/R and --bare-path P (what each session GETs; default /data).
 * Prints medians, ratios and peak RSS per process as a BENCHMARKS.md section.
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { Verifier } from "tlsn-wasm";
import { LocalProver } from "../src/engine/prover.ts";
import { startLoopbackBridge } from "../src/engine/bridge.ts";
import { type ProverSession, closeProverSession } from "../src/engine/session.ts";
import { startEngine } from "../src/engine/wasm.ts";
import { scratchDir, tlsFixture } from "../testkit/env.ts";
import { BINARY_CLI, type CliCommand, SOURCE_CLI, runCli, startProver } from "../testkit/prover.ts";
import { peakRssBytes, treeTotal } from "../testkit/process.ts";
import { firstEvent, proofData } from "../testkit/sse.ts";
import { getFromTarget, revealAll } from "../testkit/engine-exchange.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";
import { SIZED_PARTS, type SizedPart, benchSized } from "./bench-sized.ts";
import { benchProxy, benchProxyRemoteSoak } from "./bench-proxy.ts";

const SIZES = { maxSentData: 1024, maxRecvData: 4096 };
/** What the bare engine's sessions GET from the target: a small JSON answer (--bare-path, e.g. /big?bytes=12000). */
const BARE_PATH = "/data";
const THREADS = 2;

const argument = (name: string) => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
};
const emit = (line: Record<string, unknown>) => console.log(JSON.stringify(line));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Peak resident memory of a running process and its engine hosts, from the kernel. */
const peakRssMB = (pid: number): number => Math.round(treeTotal(pid, peakRssBytes) / 2 ** 20);

/** Child: one Verifier per accepted MPC socket; prints when each session is verified. */
const sizesArgument = (): typeof SIZES => {
  const [sent, recv] = (argument("--sizes") ?? `${SIZES.maxSentData}/${SIZES.maxRecvData}`).split("/").map(Number) as [number, number];
  return { maxSentData: sent, maxRecvData: recv };
};

async function bareVerifier(sizes: typeof SIZES) {
  await startEngine({ threads: THREADS, testTrustAnchorPem: tlsFixture().caPem });
  const bridge = startLoopbackBridge();
  const server = Bun.serve<{ peer?: ReturnType<typeof bridge.openPeer> }>({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: (request, srv) => (srv.upgrade(request, { data: {} }) ? undefined : new Response("upgrade", { status: 400 })),
    websocket: {
      maxPayloadLength: 256 * 1024 * 1024,
      idleTimeout: 0,
      open(ws) {
        const peer = bridge.openPeer({ onData: (d) => ws.readyState === 1 && ws.sendBinary(d), onClose: () => ws.close() });
        ws.data.peer = peer;
        const verifier = new Verifier({
          max_sent_data: sizes.maxSentData,
          max_recv_data: sizes.maxRecvData,
          max_sent_records: undefined,
          max_recv_records_online: undefined,
        });
        void verifier
          .connect(peer.url)
          .then(() => (peer.release(), verifier.verify()))
          .then((out) => emit({ verifiedAt: Date.now(), serverName: out.server_name }))
          .catch((error: unknown) => emit({ error: String(error) }))
          .finally(() => verifier.free());
      },
      message: (ws, m) => ws.data.peer?.send(typeof m === "string" ? new TextEncoder().encode(m) : new Uint8Array(m)),
      close: (ws) => ws.data.peer?.close(),
    },
  });
  emit({ url: `ws://127.0.0.1:${server.port}/` });
}

/** Child: one full prover session per line on stdin (the verifier URL is an argument), a GET of `path` each. */
async function bareProver(verifierUrl: string, targetPort: number, sizes: typeof SIZES, path: string) {
  await startEngine({ threads: THREADS, testTrustAnchorPem: tlsFixture().caPem });
  const bridge = startLoopbackBridge();
  let previous: ProverSession | undefined;
  for await (const _ of console) {
    // The next line comes once the verifier has finished the previous session: its prover may go now.
    if (previous) closeProverSession(previous);
    const startedAt = Date.now();
    const engine = new LocalProver(TARGET_HOST, sizes);
    await engine.setup(verifierUrl);
    const setupMs = Date.now() - startedAt;
    const session: ProverSession = (previous = { notarySessionId: "bare", serverName: TARGET_HOST, sizes, engine, closed: false });
    const exchange = await getFromTarget(session, bridge, targetPort, path);
    const requestMs = Date.now() - startedAt - setupMs;
    await revealAll(session, exchange);
    emit({ startedAt, setupMs, requestMs, revealedAt: Date.now() });
  }
}

/** Reads a child's stdout as JSON lines. */
function lines(stream: ReadableStream<Uint8Array>) {
  const queue: Record<string, unknown>[] = [];
  const waiters: ((l: Record<string, unknown>) => void)[] = [];
  void (async () => {
    let buffer = "";
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffer.slice(0, end)) as Record<string, unknown>;
        buffer = buffer.slice(end + 1);
        const waiter = waiters.shift();
        if (waiter) waiter(line);
        else queue.push(line);
      }
    }
  })();
  return () => (queue.length ? Promise.resolve(queue.shift()!) : new Promise<Record<string, unknown>>((r) => waiters.push(r)));
}

/** The bare engine's two processes start here: bench-proof.ts behind the same thread entry as the product. */
const BARE_ENGINE_ENTRY = join(import.meta.dir, "bare-engine.ts");

export async function benchBare(runs: number, targetPort: number, sizes = SIZES, path = BARE_PATH) {
  const size = `${sizes.maxSentData}/${sizes.maxRecvData}`;
  const verifier = Bun.spawn([process.execPath, BARE_ENGINE_ENTRY, "--bare-verifier", "--sizes", size], { stdout: "pipe", stderr: "inherit" });
  const fromVerifier = lines(verifier.stdout);
  const { url } = (await fromVerifier()) as { url: string };
  const prover = Bun.spawn([process.execPath, BARE_ENGINE_ENTRY, "--sizes", size, "--bare-path", path, "--bare-prover", url, String(targetPort)], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const fromProver = lines(prover.stdout);
  const results: { totalMs: number; setupMs: number; requestMs: number; finishMs: number }[] = [];
  for (let run = 0; run < runs; run++) {
    prover.stdin.write("go\n");
    prover.stdin.flush();
    const p = (await fromProver()) as { startedAt: number; setupMs: number; requestMs: number };
    const v = (await fromVerifier()) as { verifiedAt?: number; error?: string };
    if (!v.verifiedAt) throw new Error(`bare verifier failed: ${v.error}`);
    const totalMs = v.verifiedAt - p.startedAt;
    results.push({ totalMs, setupMs: p.setupMs, requestMs: p.requestMs, finishMs: totalMs - p.setupMs - p.requestMs });
    console.error(`bare ${size} run ${run + 1}: ${JSON.stringify(results.at(-1))}`);
  }
  const peaks = { prover: peakRssMB(prover.pid), verifier: peakRssMB(verifier.pid) };
  prover.kill();
  verifier.kill();
  return { results, peaks };
}

const productEnv = {
  PROVER_MAX_SENT_DATA: String(SIZES.maxSentData),
  PROVER_MAX_RECV_DATA: String(SIZES.maxRecvData),
  PROVER_THREADS: String(THREADS),
};

/** One /proxy call: time to the response and to the proof event. */
async function proofThroughProduct(proverUrl: string, targetPort: number) {
  const requestId = crypto.randomUUID();
  const event = firstEvent(`${proverUrl}/proof/${requestId}`, 600_000);
  const started = performance.now();
  const response = await fetch(`${proverUrl}/proxy`, {
    headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${targetPort}/data`, "T-REQUEST-ID": requestId },
  });
  await response.arrayBuffer();
  const responseMs = performance.now() - started;
  const outcome = await event;
  const proofMs = performance.now() - started;
  if (response.status !== 200 || outcome.event !== "message") throw new Error(`proof failed: ${response.status} ${outcome.data}`);
  return { responseMs, proofMs, proof: proofData(outcome).proofText };
}

async function benchProduct(runs: number, targetPort: number, warm: boolean) {
  const prover = await startProver(SOURCE_CLI, targetPort, {
    ...productEnv,
    PROVER_POOL_SIZE: warm ? "1" : "0",
    PROVER_POOL_HOSTS: warm ? TARGET_HOST : "",
  });
  const results: { responseMs: number; proofMs: number; eventAfterResponseMs: number }[] = [];
  let proof = "";
  try {
    for (let run = 0; run < runs; run++) {
      if (warm) {
        for (;;) {
          const status = (await (await fetch(`${prover.url}/pool`)).json()) as { ready: number; warming: number; inUse: number };
          if (status.ready === 1 && status.inUse === 0) break;
          await Bun.sleep(250);
        }
      }
      const r = await proofThroughProduct(prover.url, targetPort);
      proof = r.proof;
      results.push({ responseMs: r.responseMs, proofMs: r.proofMs, eventAfterResponseMs: r.proofMs - r.responseMs });
      console.error(`${warm ? "warm" : "cold"} run ${run + 1}: ${JSON.stringify(results.at(-1))}`);
    }
    return { results, peak: peakRssMB(prover.process.pid), proof, pubKey: prover.notaryPubPath };
  } finally {
    await prover.stop();
  }
}

async function benchVerify(cli: CliCommand, proofPath: string, pubKey: string, runs: number) {
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const result = await runCli(cli, ["verify", "--allow-test-anchor", "--notary-pub-key", pubKey, "--proof", proofPath]);
    times.push(performance.now() - started);
    if (result.exitCode !== 0) throw new Error(`cli verify failed: ${result.stderr}`);
  }
  return median(times);
}

/** The sized-session measurements (all, or those `--only` names), printed as their own table. */
async function benchSizedMain() {
  const runs = Math.max(1, Number(argument("--runs") ?? 3));
  const only = (argument("--only") ?? SIZED_PARTS.join(",")).split(",");
  const unknown = only.filter((part) => !(SIZED_PARTS as readonly string[]).includes(part));
  if (unknown.length > 0) {
    console.error(`--only takes a list of ${SIZED_PARTS.join(", ")}; not: ${unknown.join(", ")}`);
    process.exit(2);
  }
  const loadAtStart = loadavg()[0]!;
  const rows = await benchSized(benchBare, {
    runs,
    mixedS: Number(argument("--mixed-s") ?? 600),
    mixSeed: Number(argument("--mix-seed") ?? Math.floor(Math.random() * 2 ** 31)),
    throughputN: Number(argument("--throughput-n") ?? 12),
    only: only as SizedPart[],
    log: (line) => console.error(line),
  });
  console.log(
    [
      `Machine: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, Bun ${Bun.version}. Load average (1 min) at start / end: ${loadAtStart.toFixed(1)} / ${loadavg()[0]!.toFixed(1)}.`,
      ...rows,
    ].join("\n"),
  );
}

/** Proxy mode's part alone. */
async function proxyOnly() {
  const loadAtStart = loadavg()[0]!;
  const soak = argument("--soak");
  const remoteSoak = argument("--soak-notary");
  const log = (line: string) => console.error(line);
  const rows = [
    ...(remoteSoak === undefined || soak !== undefined ? await benchProxy(log, soak === undefined ? 0 : Number(soak)) : []),
    ...(remoteSoak === undefined ? [] : await benchProxyRemoteSoak(log, Number(remoteSoak))),
  ];
  console.log(
    [
      `Machine: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, Bun ${Bun.version}. Local target, embedded notary${remoteSoak === undefined ? "" : " (the standalone notary's soak: its own process)"}. Load average (1 min) at start / end: ${loadAtStart.toFixed(1)} / ${loadavg()[0]!.toFixed(1)}.`,
      "",
      "| Measure | Median | Ratio | Goal |",
      "|---|---|---|---|",
      ...rows,
    ].join("\n"),
  );
}

/** The bare engine alone (--sizes, --bare-path, --runs): where a session's time goes, by size and answer. */
async function bareOnly() {
  const runs = Math.max(1, Number(argument("--runs") ?? 3));
  const sizes = sizesArgument();
  const path = argument("--bare-path") ?? BARE_PATH;
  const target = startTarget(tlsFixture());
  const { results } = await benchBare(runs, target.port!, sizes, path);
  target.stop(true);
  const s = (pick: (r: (typeof results)[number]) => number) => `${(median(results.map(pick)) / 1000).toFixed(1)} s`;
  console.log(
    `bare ${sizes.maxSentData}/${sizes.maxRecvData}, GET ${path}, medians of ${runs}: setup ${s((r) => r.setupMs)}, request ${s((r) => r.requestMs)}, reveal + verify ${s((r) => r.finishMs)}`,
  );
}

async function main() {
  const runs = Math.max(3, Number(argument("--runs") ?? 3));
  // Every measure here is CPU-bound: other work on the machine shows up in the times, so say how busy it was.
  const loadAtStart = loadavg()[0]!;
  const target = startTarget(tlsFixture());
  const port = target.port!;
  const bare = await benchBare(runs, port);
  const cold = await benchProduct(runs, port, false);
  const warm = await benchProduct(runs, port, true);
  const proofPath = join(scratchDir("bench-proof"), "proof.json");
  writeFileSync(proofPath, warm.proof);
  const verifySource = await benchVerify(SOURCE_CLI, proofPath, warm.pubKey, 5);
  const binaryExists = await Bun.file(BINARY_CLI[0]!).exists();
  const verifyBinary = binaryExists ? await benchVerify(BINARY_CLI, proofPath, warm.pubKey, 5) : undefined;
  target.stop(true);
  const proxyRows = await benchProxy((line) => console.error(line));

  const bareMs = median(bare.results.map((r) => r.totalMs));
  const coldMs = median(cold.results.map((r) => r.proofMs));
  const warmResponseMs = median(warm.results.map((r) => r.responseMs));
  const warmProofMs = median(warm.results.map((r) => r.proofMs));
  const eventAfterMs = median(warm.results.map((r) => r.eventAfterResponseMs));
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const mark = (ok: boolean) => (ok ? "✓" : "✗");
  const rows = [
    `| Bare engine: setup + request + reveal + verify | ${s(bareMs)} (setup ${s(median(bare.results.map((r) => r.setupMs)))}, request ${s(median(bare.results.map((r) => r.requestMs)))}, reveal + verify ${s(median(bare.results.map((r) => r.finishMs)))}) | — | — |`,
    `| Cold proof: /proxy call to the proof event, pool empty | ${s(coldMs)} | cold/bare ${(coldMs / bareMs).toFixed(2)} | ≤ 1.10 ${mark(coldMs / bareMs <= 1.1)} |`,
    `| Warm proof: /proxy latency | ${s(warmResponseMs)} | warm/bare ${(warmResponseMs / bareMs).toFixed(2)} | ≤ 0.25 ${mark(warmResponseMs / bareMs <= 0.25)} |`,
    `| Warm proof: /proxy call to the proof event | ${s(warmProofMs)} | event ${Math.round(eventAfterMs)} ms after the response | ≤ 1 s ${mark(eventAfterMs <= 1000)} |`,
    `| \`cli verify\` (source, \`bun index.ts\`), median of 5 | ${Math.round(verifySource)} ms | — | < 200 ms ${mark(verifySource < 200)} |`,
    ...(verifyBinary === undefined ? [] : [`| \`cli verify\` (compiled \`dist/cli\`), median of 5 | ${Math.round(verifyBinary)} ms | — | < 200 ms ${mark(verifyBinary < 200)} |`]),
    ...proxyRows,
  ];
  console.log(
    [
      `Machine: ${cpus().length} cores, ${Math.round(totalmem() / 1024 ** 3)} GiB, Bun ${Bun.version}, tlsn-wasm 0.1.0-alpha.12, ${THREADS} engine threads per process.`,
      `Sessions ${SIZES.maxSentData} B sent / ${SIZES.maxRecvData} B received, local TLS 1.2 target. Medians of ${runs} runs.`,
      `Load average (1 min) at start / end: ${loadAtStart.toFixed(1)} / ${loadavg()[0]!.toFixed(1)}.`,
      "",
      "| Measure | Median | Ratio | Goal |",
      "|---|---|---|---|",
      ...rows,
      "",
      `Peak RSS: bare prover ${bare.peaks.prover} MB, bare verifier ${bare.peaks.verifier} MB; product (prover + embedded notary, one process) cold ${cold.peak} MB, warm ${warm.peak} MB.`,
      "",
      `Runs (ms): bare ${JSON.stringify(bare.results.map((r) => Math.round(r.totalMs)))}, cold ${JSON.stringify(cold.results.map((r) => Math.round(r.proofMs)))}, warm /proxy ${JSON.stringify(warm.results.map((r) => Math.round(r.responseMs)))}, warm proof ${JSON.stringify(warm.results.map((r) => Math.round(r.proofMs)))}.`,
    ].join("\n"),
  );
  await benchSizedMain();
}

if (process.argv.includes("--bare-verifier")) await bareVerifier(sizesArgument());
else if (process.argv.includes("--bare-prover")) {
  await bareProver(argument("--bare-prover")!, Number(process.argv.at(-1)), sizesArgument(), argument("--bare-path") ?? BARE_PATH);
} else if (import.meta.main) {
  const only = process.argv.includes("--bare-only") ? bareOnly : process.argv.includes("--sized-only") ? benchSizedMain : process.argv.includes("--proxy-only") ? proxyOnly : main;
  await only();
  // The report is out and every server it started is stopped; the process stayed alive, idle, after some runs
  // (the handle holding it was not found), so a scripted run would hang.
  process.exit(0);
}
