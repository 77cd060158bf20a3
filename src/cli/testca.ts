/**
 * `cli testca`: a test CA the engine accepts (the subject of the built-in anchor it replaces, a P-256 key) and a
 * server certificate from it for local HTTPS servers, written as PEM files; prints the environment that makes a
 * prover trust it, as `export` lines (`eval "$(cli testca ...)"`). No openssl needed (src/engine/test-ca.ts).
 * An existing CA in the folder is kept (a prover already trusting it keeps working) unless --force.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join, resolve } from "node:path";
import { defineCommand } from "citty";
import { type IssuedCertificate, issueServerCertificate, loadTestCa, makeTestCa } from "../engine/test-ca.ts";
import { AppError } from "../core/errors.ts";
import { makePrivateDir } from "../base/private-files.ts";
import { optionValues } from "./option-values.ts";
import { selfCommand, shellQuoted } from "./self-command.ts";
import { DEMO_TOKEN, startDemoTarget } from "./demo-target.ts";
import { listening } from "./serve.ts";
import { dataDirOf } from "../prover/config.ts";

export const TEST_CA_FILES = { ca: "ca.pem", caKey: "ca.key", chain: "server.pem", key: "server.key" } as const;

/** The files of a test CA folder, and what a prover needs to trust it and reach the server by name. */
export interface TestCaFolder {
  caPath: string;
  chainPath: string;
  keyPath: string;
  /** Whether the CA was made now (else an earlier one was kept). */
  newCa: boolean;
  chainPem: string;
  keyPem: string;
}

function write(path: string, text: string, mode: number): void {
  try {
    rmSync(path, { force: true });
    writeFileSync(path, text, { flag: "wx", mode });
  } catch (error) {
    throw new AppError("file_unreadable", `cannot write ${path}: ${(error as Error).message}`);
  }
}

function readCa(dir: string): IssuedCertificate {
  try {
    return loadTestCa(readFileSync(join(dir, TEST_CA_FILES.ca), "utf8"), readFileSync(join(dir, TEST_CA_FILES.caKey), "utf8"));
  } catch (error) {
    const reason = error instanceof AppError ? error.message : (error as Error).message;
    throw new AppError("config_invalid", `${dir} holds a CA that cannot be used (${reason}); use --force to make a new one`);
  }
}

/** Writes (or keeps) the CA in `dir` and a server certificate for `names` from it. */
export function writeTestCa(dir: string, names: readonly string[], forceNewCa = false): TestCaFolder {
  try {
    makePrivateDir(dir);
  } catch (error) {
    throw new AppError("file_unreadable", `cannot create ${dir}: ${(error as Error).message}`);
  }
  const caPath = resolve(dir, TEST_CA_FILES.ca);
  const keep = !forceNewCa && existsSync(caPath) && existsSync(join(dir, TEST_CA_FILES.caKey));
  const ca = keep ? readCa(dir) : makeTestCa();
  const server = issueServerCertificate(ca, names);
  if (!keep) {
    write(join(dir, TEST_CA_FILES.caKey), ca.keyPem, 0o600);
    write(caPath, ca.pem, 0o644);
  }
  const chainPem = server.pem + ca.pem;
  write(join(dir, TEST_CA_FILES.key), server.keyPem, 0o600);
  write(join(dir, TEST_CA_FILES.chain), chainPem, 0o644);
  return { caPath, chainPath: resolve(dir, TEST_CA_FILES.chain), keyPath: resolve(dir, TEST_CA_FILES.key), newCa: !keep, chainPem, keyPem: server.keyPem };
}

/** The variables that make a prover trust the test CA and reach `names` on `address:port`. */
export function testCaEnvironment(caPath: string, names: readonly string[], port: number, address: string): Record<string, string> {
  return {
    TLSN_TEST_TRUST_ANCHOR: caPath,
    PROVER_RESOLVE: names.map((name) => `${name}:${port}:${address}`).join(","),
    PROVER_ALLOW_PRIVATE_TARGETS: "1",
    PROVER_ALLOWED_PORTS: String(port),
  };
}

/** `--serve`: the demo's JSON API with this certificate until SIGINT or SIGTERM, and what to try against it. */
async function serveApi(folder: TestCaFolder, name: string, address: string, port: number): Promise<void> {
  const api = await listening(`the API on ${address}:${port}`, () => startDemoTarget(folder.chainPem, folder.keyPem, address, port));
  // Before the lines below: whoever reads them may signal at once (serve.ts).
  const signalled = new Promise<void>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
  });
  const base = `https://${name}:${port}`;
  const cli = selfCommand();
  const prover = `http://127.0.0.1:${process.env.PROVER_PORT ?? "8080"}`;
  // The key of a prover started as printed above, in this environment.
  const key = shellQuoted(join(dataDirOf(process.env), "notary.pub"));
  console.log(
    [
      `# Serving a JSON API at ${base} (TLS 1.2 and 1.3) until Ctrl-C: GET /v1/price?pair=ETH-EUR, and GET /v1/account?user=42 with`,
      `#   Authorization: Bearer ${DEMO_TOKEN}. With the prover above running on ${prover}:`,
      // The answer, then its proof from the proof stream (a subscriber that comes after the proof still gets it).
      `id=$(cat /proc/sys/kernel/random/uuid); curl -s -H "T-REQUEST-ID: $id" -H 'T-PROOF-MODE: proxy' -H 'T-PROXY-URL: ${base}/v1/account?user=42' -H 'Authorization: Bearer ${DEMO_TOKEN}' -H 'T-REDACTED: res:body:balance' ${prover}/proxy; echo; curl -s ${prover}/proof/$id`,
      `${cli} prove --allow-test-anchor --prover ${prover} --notary-pub-key ${key} --url '${base}/v1/price?pair=ETH-EUR' --mode mpc --out proof.json`,
      `${cli} verify --allow-test-anchor --notary-pub-key ${key} --proof proof.json`,
    ].join("\n"),
  );
  await signalled;
  api.stop();
}

function parsePort(value: unknown): number {
  const port = Number(value);
  if (typeof value !== "string" || !/^\d+$/.test(value) || port < 1 || port > 65535) throw new AppError("usage", "--port must be a port number (1-65535)");
  return port;
}

export default defineCommand({
  meta: { name: "testca", description: "Make a test CA the engine trusts (offline tests) and a server certificate from it; prints the prover's settings" },
  args: {
    out: { type: "string", valueHint: "dir", required: true, description: "Folder for ca.pem, ca.key, server.pem (server then CA) and server.key; an existing CA there is kept" },
    name: { type: "string", description: "A DNS name of the server (repeat for more; default localhost)" },
    port: { type: "string", default: "8443", description: "The port the server listens on" },
    address: { type: "string", default: "127.0.0.1", description: "The address the names resolve to" },
    force: { type: "boolean", default: false, description: "Make a new CA even if the folder has one" },
    serve: {
      type: "boolean",
      default: false,
      description: "Then serve a small JSON API with the certificate (TLS 1.2 and 1.3) on --address:--port until Ctrl-C, to prove against",
    },
  },
  async run({ args, rawArgs }) {
    if (typeof args.out !== "string" || args.out === "") throw new AppError("usage", "--out needs a folder path");
    const given = optionValues(rawArgs, "name").map((name) => name.trim().toLowerCase());
    const names = given.length > 0 ? [...new Set(given)] : ["localhost"];
    const port = parsePort(args.port);
    if (!isIP(String(args.address))) throw new AppError("usage", "--address must be an IP address");
    const folder = writeTestCa(args.out, names, args.force);
    const env = testCaEnvironment(folder.caPath, names, port, String(args.address));
    const lines = [
      `# ${folder.newCa ? "A new" : "The existing"} test CA ${folder.caPath}: trust it nowhere but in tlsproof tests.`,
      `# Serve ${folder.chainPath} with the key ${folder.keyPath} (${names.join(", ")}) on ${args.address}:${port}; TLS 1.2 for MPC mode.`,
      // One command, not exports: a shell that kept the anchor would make every later prover a test node.
      "# A prover that trusts it and reaches the server by those names (the settings hold for this command only):",
      `env ${Object.entries(env).map(([name, value]) => `${name}=${shellQuoted(value)}`).join(" ")} ${selfCommand()} prover start`,
      "# A standalone notary needs TLSN_TEST_TRUST_ANCHOR too; for proxy mode, in its YAML's proxy section:",
      `#   resolve: [${names.map((name) => `"${name}:${port}:${args.address}"`).join(", ")}], allow_private_targets: true, allowed_ports: [${port}]`,
    ];
    console.log(lines.join("\n"));
    if (args.serve) await serveApi(folder, names[0]!, String(args.address), port);
  },
});
