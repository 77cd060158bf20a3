/**
 * `cli demo`'s run (demo.ts says what the demo is): the test CA, the local API and the prover started in this process,
 * the two proofs made, checked and reported, and everything stopped on a signal.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startProverServer, type ProverServer } from "../app/prover.ts";
import { prove, type ProveOptions } from "../client/prove.ts";
import { TlsproofError } from "../client/errors.ts";
import { loadProverConfig } from "../prover/config.ts";
import { AppError } from "../core/errors.ts";
import { makePrivateDir } from "../base/private-files.ts";
import { createLogger } from "../base/log.ts";
import { readPublicKeysFile } from "../proof/keys.ts";
import { renderVerifiedProof } from "../proof/render.ts";
import { verifyProof } from "../proof/verify.ts";
import { DEMO_HOST, DEMO_TOKEN, type DemoTarget, startDemoTarget } from "./demo-target.ts";
import { progressLine } from "./progress.ts";
import { testCaEnvironment, writeTestCa } from "./testca.ts";
import { selfCommand, shellQuoted } from "./self-command.ts";

/** Small MPC sessions: the demo's answers are a few hundred bytes, and setup time grows with the sizes. */
const DEMO_SESSION = { PROVER_MAX_SENT_DATA: "1024", PROVER_MAX_RECV_DATA: "2048" };

interface Demo {
  work: string;
  /** The folder was named with --dir: it stays. */
  keep: boolean;
  target?: DemoTarget;
  prover?: ProverServer;
  notaryPubPath?: string;
}

/** The prover's environment: the test CA, the demo API by name, one engine host, no warm pool. */
function proverEnv(demo: Demo, caPath: string, port: string): Record<string, string> {
  return {
    PROVER_HOST: "127.0.0.1",
    PROVER_PORT: port,
    PROVER_DATA_DIR: join(demo.work, "prover"),
    PROVER_POOL_SIZE: "0",
    PROVER_ENGINE_HOSTS: "1",
    ...DEMO_SESSION,
    ...testCaEnvironment(caPath, [DEMO_HOST], demo.target!.port, "127.0.0.1"),
  };
}

async function start(demo: Demo, port: string): Promise<void> {
  const ca = writeTestCa(join(demo.work, "ca"), [DEMO_HOST]);
  demo.target = startDemoTarget(ca.chainPem, ca.keyPem);
  const config = loadProverConfig(proverEnv(demo, ca.caPath, port));
  // Quiet: warnings and errors only (the test trust anchor's warning among them).
  demo.prover = await startProverServer(config, createLogger({ level: "warn", fields: { component: "prover" } }));
  demo.notaryPubPath = join(config.dataDir, "notary.pub");
  console.error(`demo: ${DEMO_HOST} (a local HTTPS API, port ${demo.target.port}) and a prover with its embedded notary at ${demo.prover.url}`);
}

interface DemoCall {
  mode: "proxy" | "mpc";
  label: string;
  options: Pick<ProveOptions, "url" | "headers" | "redact">;
}

/**
 * One GET per mode. Proxy mode proves its request with the credential kept from the notary (TLS 1.3) and written last,
 * as the request rule proves it; MPC mode, whose engine orders headers itself, proves a request without one.
 */
const calls = (port: number): DemoCall[] => [
  {
    mode: "proxy",
    label: "proxy mode: the notary relays the connection and sees the response, not the credential (milliseconds)",
    options: {
      url: `https://${DEMO_HOST}:${port}/v1/account?user=42`,
      headers: { authorization: `Bearer ${DEMO_TOKEN}` },
      redact: [{ kind: "res:body", path: ["balance"] }],
    },
  },
  {
    mode: "mpc",
    label: "MPC mode: the notary sees nothing in clear (tens of seconds on two cores)",
    options: { url: `https://${DEMO_HOST}:${port}/v1/price?pair=ETH-EUR` },
  },
];

/** Proves one call, saves the proof, checks the file as `cli verify` does and prints its report. */
async function proveAndReport(demo: Demo, call: DemoCall, index: number, signal: AbortSignal): Promise<void> {
  const progress = progressLine(process.stderr, call.mode);
  const pinned = readFileSync(demo.notaryPubPath!, "utf8");
  let result;
  try {
    // The demo's target is under its own test CA: its proofs are test-anchor proofs, accepted on purpose.
    result = await prove({ prover: demo.prover!.url, notaryKeys: [pinned], mode: call.mode, allowTestTrustAnchor: true, signal, ...call.options, onResponse: (r) => progress.answered(r.status) });
  } finally {
    progress.clear();
    progress.stop();
  }
  const proofPath = join(demo.work, `${call.mode}-proof.json`);
  writeFileSync(proofPath, result.proofText);
  const expected = { requestId: result.requestId, serverName: DEMO_HOST, allowTestTrustAnchor: true };
  const verified = verifyProof(readFileSync(proofPath, "utf8"), readPublicKeysFile(demo.notaryPubPath!), expected);
  const viewer = `${demo.prover!.url}/viewer?requestId=${result.requestId}&serverName=${DEMO_HOST}&allowTestAnchor=1`;
  console.log(`\n=== Proof ${index + 1} of 2, ${call.label} ===\n`);
  console.log(renderVerifiedProof(verified));
  const kept = demo.keep ? "" : " (a temporary folder, removed when the demo stops: --dir DIR keeps the files)";
  console.log(`Saved as ${proofPath}${kept}; check it again: ${selfCommand()} verify --allow-test-anchor --notary-pub-key ${shellQuoted(demo.notaryPubPath!)} --proof ${shellQuoted(proofPath)}`);
  console.log(`Viewer: ${viewer} (it loads this proof from the prover and checks it with the prover's key)`);
}

async function stopAll(demo: Demo): Promise<void> {
  await demo.prover?.stop(0);
  demo.target?.stop();
  if (!demo.keep) rmSync(demo.work, { recursive: true, force: true });
}

/** Resolves at the first SIGINT or SIGTERM, and aborts `stop`. */
function signalled(stop: AbortController): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => {
      stop.abort(new AppError("shutting_down", `stopped by ${signal}`));
      resolve(signal);
    };
    process.once("SIGINT", () => on("SIGINT"));
    process.once("SIGTERM", () => on("SIGTERM"));
  });
}

function workFolder(dir: unknown): { work: string; keep: boolean } {
  if (typeof dir === "string" && dir !== "") {
    const work = resolve(dir);
    makePrivateDir(work);
    return { work, keep: true };
  }
  return { work: mkdtempSync(join(tmpdir(), "tlsproof-demo-")), keep: false };
}

/** `cli demo`'s run (demo.ts): until a signal, or the first failure. */
export async function runDemo(args: { port: unknown; dir: unknown }): Promise<void> {
  if (!/^\d+$/.test(String(args.port)) || Number(args.port) > 65535) throw new AppError("usage", "--port must be a port number (0: any free one)");
  const stop = new AbortController();
  const stopped = signalled(stop);
  const { work, keep } = workFolder(args.dir);
  const demo: Demo = { work, keep };
  try {
    // Not raced with a signal: what starts must be known to be stopped.
    await start(demo, String(args.port));
    for (const [index, call] of calls(demo.target!.port).entries()) {
      if (stop.signal.aborted) throw stop.signal.reason;
      await proveAndReport(demo, call, index, stop.signal);
    }
    console.error("\ndemo: both proofs verified. The prover keeps running for the viewer; Ctrl-C stops everything.");
    const signal = await stopped;
    console.error(`demo: ${signal}: stopping`);
  } catch (error) {
    if (stop.signal.aborted) throw new AppError("shutting_down", "the demo was stopped before its proofs were made");
    // The client's failure, with its code: one line, exit 1.
    if (error instanceof TlsproofError) throw new Error(`${error.code}: ${error.message}`);
    throw error;
  } finally {
    await stopAll(demo);
  }
}
