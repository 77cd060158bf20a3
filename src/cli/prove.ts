/**
 * `cli prove`: one proven exchange from a shell script, through the client's `prove()` (src/client/prove.ts):
 * subscribe, `/proxy`, the target's answer to stdout (or --answer), then the proof, verified with prove()'s
 * checks (pinned notary keys, this request id, the URL's host, the answer received) and written to --out.
 * Exit 0; 1 with `error: <code>: <message>` when the prover, the target or the proof fails; 2 for usage.
 * Header values given with --header are secrets: nothing here prints them.
 */
import { existsSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { defineCommand } from "citty";
import { type ProvableMethod, type ProveOptions, prove } from "../client/prove.ts";
import { inFlagWords } from "../client/callers-words.ts";
import { TlsproofError } from "../client/errors.ts";
import { AppError } from "../core/errors.ts";
import { isHttpToken } from "../core/http-token.ts";
import { terminalLine, terminalText } from "../base/terminal-text.ts";
import { encodePublicKeyPem, readPublicKeysFile } from "../proof/keys.ts";
import { type RedactionPattern, parseRedactions } from "../redaction/patterns.ts";
import { optionValues } from "./option-values.ts";
import { CLAIM_SALT, parseClaims, RECIPIENT } from "../claims/grammar.ts";
import { claimLine } from "../claims/claim.ts";
import { type Progress, progressLine } from "./progress.ts";
import { MAX_QUORUM } from "../proof/quorum.ts";
import { BUILT_IN_MODES } from "../proof/modes.ts";

const METHODS: readonly ProvableMethod[] = ["GET", "POST", "PUT", "DELETE"];

const usage = (message: string) => new AppError("usage", message);

function required(value: unknown, flag: string): string {
  if (typeof value !== "string" || value.trim() === "") throw usage(`--${flag} needs a value`);
  return value.trim();
}

/** `--header 'Name: value'`, each named by its position in errors (its value may be a secret). */
function parseHeaders(values: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  values.forEach((text, index) => {
    const colon = text.indexOf(":");
    const name = colon < 0 ? "" : text.slice(0, colon).trim();
    if (!isHttpToken(name)) throw usage(`--header ${index + 1} is not "Name: value"`);
    headers[name] = text.slice(colon + 1).trim();
  });
  return headers;
}

/** `--data`: JSON text, or `@file` holding it (`@-`: stdin). The text is never printed: it may hold secrets. */
async function parseData(value: string): Promise<unknown> {
  let text = value;
  if (value.startsWith("@")) {
    const path = value.slice(1);
    try {
      text = path === "-" ? await Bun.stdin.text() : await Bun.file(path).text();
    } catch (error) {
      throw new AppError("file_unreadable", `cannot read --data file ${path}: ${(error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw usage("--data must be JSON (the engine sends JSON bodies only), or @file holding JSON");
  }
}

function parseTarget(value: unknown): string {
  const url = required(value, "url");
  if (!URL.canParse(url) || new URL(url).protocol !== "https:") throw usage("--url must be an https:// URL");
  return url;
}

function parseProver(value: unknown): string {
  const url = required(value, "prover");
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw usage("--prover must be the prover's http(s):// URL");
  return url;
}

function apiKeyFrom(name: unknown): string | undefined {
  if (name === undefined) return undefined;
  const variable = required(name, "api-key-env");
  const key = process.env[variable];
  if (!key) throw usage(`--api-key-env: the environment variable ${variable} is not set`);
  return key;
}

/** The --redact entries, as the prover reads T-REDACTED; a bad one is named as the flag, by position. */
function redactions(values: readonly string[]): RedactionPattern[] {
  try {
    return values.flatMap((entries) => parseRedactions(entries));
  } catch (error) {
    if (error instanceof AppError) throw new AppError(error.code, inFlagWords(error.message), error.details);
    throw error;
  }
}

/** The --claim entries, as the prover reads T-CLAIM; a bad one is named as the flag, by position. */
function checkedClaims(values: readonly string[]): string[] {
  try {
    parseClaims(values.join(","));
    return [...values];
  } catch (error) {
    if (error instanceof AppError) throw new AppError(error.code, inFlagWords(error.message), error.details);
    throw error;
  }
}

function claimSalt(value: string): string {
  if (!CLAIM_SALT.test(value)) throw usage("--claim-salt must be 0x and 64 hex digits (32 random bytes: keep them to open a commitment)");
  return value;
}

function quorumSize(value: string): number {
  if (!/^[1-9][0-9]?$/.test(value.trim()) || Number(value) > MAX_QUORUM) throw usage(`--quorum must be a whole number from 1 to ${MAX_QUORUM}`);
  return Number(value);
}

function recipient(value: string): string {
  if (!RECIPIENT.test(value)) throw usage("--recipient must be an Ethereum address: 0x and 40 hex digits");
  return value;
}

/** The keys of the --notary-pub-key file, as PEM texts for prove(). */
const pinnedKeys = (path: string): string[] => readPublicKeysFile(path).map(encodePublicKeyPem);

type Args = Record<string, unknown>;

/** Every option checked before anything is sent: a usage error never reaches the prover. */
async function proveOptions(args: Args, rawArgs: readonly string[]): Promise<ProveOptions> {
  const method = (typeof args.method === "string" ? args.method.toUpperCase() : args.data !== undefined ? "POST" : "GET") as ProvableMethod;
  if (!METHODS.includes(method)) throw usage(`--method must be one of ${METHODS.join(", ")}`);
  const timeoutS = args.timeout === undefined ? undefined : Number(args.timeout);
  if (timeoutS !== undefined && !(Number.isInteger(timeoutS) && timeoutS > 0)) throw usage("--timeout must be a whole number of seconds");
  const reveal = args.reveal === undefined ? undefined : required(args.reveal, "reveal");
  if (reveal !== undefined && reveal !== "none" && reveal !== "request") throw usage("--reveal must be none or request");
  if (reveal !== undefined && args.mode !== "proxy") throw usage("--reveal is for --mode proxy (in MPC mode the request is in the proof)");
  return {
    prover: parseProver(args.prover),
    apiKey: apiKeyFrom(args["api-key-env"]),
    notaryKeys: pinnedKeys(required(args["notary-pub-key"], "notary-pub-key")),
    url: parseTarget(args.url),
    method,
    headers: parseHeaders(optionValues(rawArgs, "header")),
    body: args.data === undefined ? undefined : await parseData(required(args.data, "data")),
    redact: redactions(optionValues(rawArgs, "redact")),
    allowUnmatchedRedactions: args["allow-unmatched"] === true,
    proveFailed: args["prove-failed"] === true,
    mode: args.mode === "proxy" || args.mode === "mpc" ? args.mode : undefined,
    reveal,
    allowHiddenRequest: args["allow-hidden-request"] === true,
    allowTestTrustAnchor: args["allow-test-anchor"] === true,
    claims: checkedClaims(optionValues(rawArgs, "claim")),
    ...(args["claim-salt"] === undefined ? {} : { claimSalt: claimSalt(required(args["claim-salt"], "claim-salt")) }),
    ...(args.recipient === undefined ? {} : { recipient: recipient(required(args.recipient, "recipient")) }),
    ...(args.quorum === undefined ? {} : { quorum: quorumSize(required(args.quorum, "quorum")) }),
    timeoutMs: timeoutS === undefined ? undefined : timeoutS * 1000,
  };
}

/** Where the proof goes: its folder must exist now, not after a minute of MPC. */
function outPath(value: unknown): string {
  const path = resolve(required(value, "out"));
  if (!existsSync(dirname(path))) throw usage(`--out: the folder ${dirname(path)} does not exist`);
  return path;
}

function writeProof(path: string, proofText: string): void {
  try {
    writeFileSync(path, proofText);
  } catch (error) {
    throw new AppError("file_unreadable", `cannot write the proof to ${path}: ${(error as Error).message}`);
  }
}

async function writeAnswer(body: Uint8Array, answerPath: string | undefined, progress: Progress): Promise<void> {
  if (answerPath) {
    try {
      writeFileSync(answerPath, body);
    } catch (error) {
      throw new AppError("file_unreadable", `cannot write --answer ${answerPath}: ${(error as Error).message}`);
    }
    return;
  }
  progress.clear();
  // Piped, the answer is data and goes byte for byte; on a terminal it is text from the target, shown escaped.
  await Bun.write(Bun.stdout, process.stdout.isTTY ? terminalText(new TextDecoder().decode(body)) : body);
}

export default defineCommand({
  meta: { name: "prove", description: "Prove one HTTPS exchange through a prover; the answer to stdout, the verified proof to --out" },
  args: {
    prover: { type: "string", required: true, description: "The prover's URL, e.g. http://127.0.0.1:8080" },
    "notary-pub-key": { type: "string", valueHint: "file", required: true, description: "The notary public key(s) you trust (PEM file); the proof must be signed by one" },
    url: { type: "string", required: true, description: "The target: an https:// URL" },
    out: { type: "string", valueHint: "file", required: true, description: "Where to write the proof (JSON; `cli verify --proof` reads it)" },
    mode: { type: "enum", options: Object.keys(BUILT_IN_MODES), description: "mpc (the notary sees nothing in clear) or proxy (fast; the notary sees the response); default: the prover's" },
    reveal: {
      type: "string",
      description:
        "Proxy mode (T-PROXY-REVEAL): none hides the request whole from the notary and the proof; request shows the notary all of it, secrets included (TLS 1.2: the only way to prove it). Default: proven with its secrets kept from the notary (TLS 1.3)",
    },
    "allow-hidden-request": {
      type: "boolean",
      default: false,
      description: "Accept a proof whose request is hidden (proxy mode: --reveal none, or a TLS 1.2 target): it does not show the method, URL, Host or port",
    },
    "allow-test-anchor": {
      type: "boolean",
      default: false,
      description: "Accept a proof made under a TEST trust anchor (TLSN_TEST_TRUST_ANCHOR): it proves nothing about the public web",
    },
    header: { type: "string", description: "A header for the target, 'Name: value' (repeat for more); values are never printed" },
    claim: {
      type: "string",
      description: "T-CLAIM entries the notary states of the answer, e.g. 'res:body:balance>1000,res:body:name,commit:res:body:balance' (repeat for more)",
    },
    "claim-salt": { type: "string", description: "The salt of commit: claims, 0x and 64 hex digits; keep it to open the commitment later" },
    recipient: { type: "string", description: "The Ethereum address the proof is made for (0x...), signed into it and its EVM attestation" },
    quorum: {
      type: "string",
      description: "How many distinct notaries prove the call (T-QUORUM; needs --claim, GET, --mode proxy): the proof is a quorum proof, verified as one against --notary-pub-key",
    },
    redact: { type: "string", description: "T-REDACTED entries, e.g. 'req:header:authorization,res:body:balance' (repeat for more)" },
    "allow-unmatched": { type: "boolean", default: false, description: "A redaction that matches nothing is listed as unmatched instead of preventing the proof" },
    "prove-failed": { type: "boolean", default: false, description: "Prove answers with status >= 400 too" },
    method: { type: "string", description: "GET, POST, PUT or DELETE (default GET; POST with --data)" },
    data: { type: "string", description: "A JSON body, or @file holding one (@- for stdin)" },
    answer: { type: "string", valueHint: "file", description: "Write the target's answer (body) to this file instead of stdout" },
    "api-key-env": { type: "string", description: "The environment variable holding the prover's API key" },
    timeout: { type: "string", description: "Seconds for the whole call, proof included (default 300)" },
  },
  async run({ args, rawArgs }) {
    const options = await proveOptions(args, rawArgs);
    const out = outPath(args.out);
    const answerPath = typeof args.answer === "string" && args.answer !== "" ? resolve(args.answer) : undefined;
    const progress = progressLine(process.stderr, options.mode ?? "the prover's default mode");
    try {
      const result = await prove({
        ...options,
        onResponse: async (response) => {
          progress.answered(response.status);
          await writeAnswer(response.body, answerPath, progress);
        },
      });
      writeProof(out, result.proofText);
      const signers = result.quorum ? `, a quorum of ${new Set(result.quorum.notaries).size} notaries` : "";
      progress.done(`proof ${result.requestId} (${result.mode}${signers}) verified and written to ${out}`);
      for (const claim of result.claims) console.error(terminalLine(`claim: ${claimLine(claim)}`));
    } catch (error) {
      progress.clear();
      if (!(error instanceof TlsproofError)) throw error;
      // The prover's or the client's refusal: its code for scripts, one line, exit 1 whatever the code.
      console.error(terminalLine(`error: ${error.code}: ${inFlagWords(error.message)}`));
      process.exit(1);
    } finally {
      progress.stop();
    }
  },
});
