import type { Subprocess } from "bun";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TEST_SESSION, scratchDir, tlsFixture } from "./env.ts";
import { TARGET_HOST } from "./tls-fixture.ts";
import { waitUntil } from "./wait.ts";
import { type FurtherModes, type ProverServer, startProverServer } from "../src/app/prover.ts";
import { loadProverConfig } from "../src/prover/config.ts";
import { createLogger } from "../src/base/log.ts";

export const REPO = join(import.meta.dir, "..");
export const BUN = process.execPath;

/** How to run the command line: from source, or the compiled binary. */
export type CliCommand = string[];
export const SOURCE_CLI: CliCommand = [BUN, join(REPO, "index.ts")];
export const BINARY_CLI: CliCommand = [join(REPO, "dist", "cli")];

export interface RunningProver {
  url: string;
  dataDir: string;
  notaryPubPath: string;
  notaryPubPem: string;
  process: Subprocess;
  /** Everything the process wrote to stderr so far (its log). */
  log(): string;
  stop(): Promise<number>;
}

/** Reads a child's output (its stderr: the log) into a string while it runs. */
export function collectText(stream: ReadableStream<Uint8Array>): () => string {
  let text = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  })();
  return () => text;
}

/**
 * Starts `cli prover start` as a real process with its embedded notary, trusting the test CA and mapping
 * the test host to the local target. A fresh data folder unless `env` names one (PROVER_DATA_DIR: a restart).
 */
export async function startProver(cli: CliCommand, targetPort: number, env: Record<string, string> = {}): Promise<RunningProver> {
  const dataDir = env.PROVER_DATA_DIR ?? scratchDir("prover");
  const tls = tlsFixture();
  const child = Bun.spawn([...cli, "prover", "start"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PROVER_PORT: "0",
      PROVER_DATA_DIR: dataDir,
      PROVER_MAX_SENT_DATA: String(TEST_SESSION.maxSentData),
      PROVER_MAX_RECV_DATA: String(TEST_SESSION.maxRecvData),
      PROVER_ALLOW_PRIVATE_TARGETS: "1",
      PROVER_RESOLVE: `${TARGET_HOST}:${targetPort}:127.0.0.1`,
      // Local targets listen on random ports, outside the default 443,8443 (some tests map several).
      PROVER_ALLOWED_PORTS: "*",
      TLSN_TEST_TRUST_ANCHOR: tls.caPath,
      // No warm pool unless a test asks for one: background setups would compete with the test's own.
      PROVER_POOL_SIZE: "0",
      ...env,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const log = collectText(child.stderr);
  // Compact (`url=…`) or JSON (`"url":"…"`) log lines.
  const listening = await waitUntil("the prover to listen", () => /prover listening.*?\burl"?[=:]"?([^\s"]+)/.exec(log()), (m) => m !== null, 60_000, {
    intervalMs: 50,
    hopeless: () => (child.exitCode === null ? undefined : `the prover exited ${child.exitCode}`),
    context: log,
  });
  const url = listening![1]!;
  const notaryPubPath = join(dataDir, "notary.pub");
  return {
    url,
    dataDir,
    notaryPubPath,
    // Only an embedded notary writes its key here; with PROVER_NOTARY_URL there is none.
    notaryPubPem: existsSync(notaryPubPath) ? readFileSync(notaryPubPath, "utf8") : "",
    process: child,
    log,
    async stop() {
      child.kill("SIGTERM");
      return await child.exited;
    },
  };
}

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the command line to its end; `env` adds to a bare environment (PATH, HOME). */
export async function runCli(cli: CliCommand, args: string[], stdin?: string, env: Record<string, string> = {}): Promise<CliResult> {
  const child = Bun.spawn([...cli, ...args], {
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, stdout, stderr };
}

/**
 * The composed prover server in this process (what `cli prover start` runs), with its embedded notary, trusting
 * the test CA and mapping the test host to the local target on `targetPort`; `env` adds or overrides settings.
 */
export async function startProverInProcess(
  targetPort: number,
  env: Record<string, string> = {},
  further: FurtherModes = {},
): Promise<{ server: ProverServer; dataDir: string }> {
  const dataDir = env.PROVER_DATA_DIR ?? scratchDir("prover");
  const config = loadProverConfig({
    PROVER_PORT: "0",
    PROVER_DATA_DIR: dataDir,
    PROVER_POOL_SIZE: "0",
    PROVER_ENGINE_HOSTS: "1",
    PROVER_ALLOW_PRIVATE_TARGETS: "1",
    PROVER_ALLOWED_PORTS: "*",
    PROVER_RESOLVE: `${TARGET_HOST}:${targetPort}:127.0.0.1`,
    TLSN_TEST_TRUST_ANCHOR: tlsFixture().caPath,
    ...env,
  });
  return { server: await startProverServer(config, createLogger({ level: "error" }), further), dataDir };
}
