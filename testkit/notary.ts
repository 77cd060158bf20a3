import type { Subprocess } from "bun";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { scratchDir, tlsFixture } from "./env.ts";
import { TARGET_HOST } from "./tls-fixture.ts";
import { SOURCE_CLI, collectText, runCli } from "./prover.ts";

import { waitUntil } from "./wait.ts";

export { eventually } from "./wait.ts";

export interface RunningNotary {
  url: string;
  port: number;
  process: Subprocess;
  log(): string;
}

/** Waits until `pattern` appears in the log; fails when the process exits first or time runs out. */
export async function waitForLog(child: Subprocess, log: () => string, pattern: RegExp, ms = 60_000): Promise<RegExpExecArray> {
  const exited = () => (child.exitCode === null ? undefined : `the process exited ${child.exitCode}`);
  const match = await waitUntil(`${pattern} in the log`, () => pattern.exec(log()), (found) => found !== null, ms, {
    intervalMs: 50,
    hopeless: exited,
    context: log,
  });
  return match!;
}

/** A free TCP port on loopback (bound, then released). */
export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

/** Writes a notary.yaml into a fresh folder and returns its path. */
export function notaryConfig(yaml: string, files: Record<string, string> = {}): string {
  const dir = scratchDir("notary");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const path = join(dir, "notary.yaml");
  writeFileSync(path, yaml);
  return path;
}

/** Runs `cli notary start --config <path>` as a real process trusting the test CA. */
export async function startNotary(configPath: string, env: Record<string, string> = {}): Promise<RunningNotary> {
  const child = Bun.spawn([...SOURCE_CLI, "notary", "start", "--config", configPath], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      TLSN_TEST_TRUST_ANCHOR: tlsFixture().caPath,
      NOTARY_THREADS: "2",
      ...env,
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const log = collectText(child.stderr);
  const match = await waitForLog(child, log, /notary listening.* url=(\S+)/);
  const url = match[1]!;
  return { url, port: Number(new URL(url).port), process: child, log };
}

export interface KeyedNotary {
  notary: RunningNotary;
  /** Its public key file, `notary.pub` beside the config. */
  pubPath: string;
}

/**
 * A `cli notary start` whose whitelist holds `apiKey`: `settings` are the YAML lines before the `auth` block,
 * the signing key is made first by `cli notary keygen` with `keygenArgs`.
 */
export async function startKeyedNotary(
  apiKey: string,
  settings: string[],
  keygenArgs: string[] = [],
  env: Record<string, string> = {},
  /** Files for its folder; given notary.key and notary.pub, it keeps that key (a replica) instead of making one. */
  files: Record<string, string> = {},
): Promise<KeyedNotary> {
  const configPath = notaryConfig([...settings, "auth:", "  enabled: true", "  whitelist: keys.csv", ""].join("\n"), {
    "keys.csv": `"Name","ApiKey","CreatedAt"\n"prover","${apiKey}","2026-01-01"\n`,
    ...files,
  });
  if (!("notary.key" in files)) {
    const keygen = await runCli(SOURCE_CLI, ["notary", "keygen", "--out", dirname(configPath), ...keygenArgs]);
    if (keygen.exitCode !== 0) throw new Error(`notary keygen failed: ${keygen.stderr}`);
  }
  return { notary: await startNotary(configPath, env), pubPath: join(dirname(configPath), "notary.pub") };
}

/**
 * The YAML lines of a `proxy:` section relaying to local targets on `ports` (TARGET_HOST resolved to loopback);
 * further `proxy.*` settings may follow them, indented by two spaces.
 */
export const proxyToLocalTargets = (ports: readonly number[]): string[] => [
  "proxy:",
  "  enabled: true",
  "  allow_private_targets: true",
  `  allowed_ports: [${ports.join(", ")}]`,
  `  resolve: [${ports.map((port) => `"${TARGET_HOST}:${port}:127.0.0.1"`).join(", ")}]`,
];

/** The notary's count of open sessions, from its /info. */
export async function notarySessions(url: string, init: BunFetchRequestInit = {}): Promise<number> {
  const info = (await (await fetch(`${url}/info`, init)).json()) as { activeSessions: number };
  return info.activeSessions;
}

/** Headers of a /proxy call that fails validation or policy before any MPC session starts. */
export const proxyHeaders = (url: string, extra: Record<string, string> = {}): Record<string, string> => ({
  "t-proxy-url": url,
  "t-request-id": crypto.randomUUID(),
  ...extra,
});
