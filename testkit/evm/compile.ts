/**
 * Compiles contracts/*.sol with solc from npm (pinned in package.json), at test time: no build artifact is
 * committed, so what runs is always what the source says. solc's output is kept in .tmp/solc/ under the hash of
 * everything it depends on (the compiler's version, the source, the settings): a run after the first loads it
 * instead of spending seconds in the compiler, and any change compiles again.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Abi, Hex } from "viem";
import { TMP_ROOT } from "../env.ts";
import { EVM_VERSION } from "./chain.ts";

export const CONTRACTS_DIR = join(import.meta.dir, "..", "..", "contracts");

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

interface SolcOutput {
  errors?: { severity: "error" | "warning" | "info"; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

const cache = new Map<string, CompiledContract>();

const require = createRequire(import.meta.url);
const SOLC_VERSION = (require("solc/package.json") as { version: string }).version;
const SOLC_CACHE = join(TMP_ROOT, "solc");

/** solc's standard-JSON output for `input`: from .tmp/solc/ when this compiler already compiled this input. */
function solcOutput(input: string): string {
  const path = join(SOLC_CACHE, `${createHash("sha256").update(`solc ${SOLC_VERSION}\n${input}`).digest("hex")}.json`);
  if (existsSync(path)) return readFileSync(path, "utf8");
  // Loaded only when needed: the compiler alone takes about a second to load.
  const solc = require("solc") as { compile(input: string): string };
  const output = solc.compile(input);
  mkdirSync(SOLC_CACHE, { recursive: true });
  // Written whole, then renamed: a process reading it never sees half a file.
  writeFileSync(`${path}.${process.pid}`, output);
  renameSync(`${path}.${process.pid}`, path);
  return output;
}

/** Compiles `contracts/<name>.sol` and returns contract `name`; any warning fails, like an error. */
export function compileContract(name: string): CompiledContract {
  const cached = cache.get(name);
  if (cached) return cached;
  const file = `${name}.sol`;
  const input = {
    language: "Solidity",
    // Every contract's source: a contract may import another (a library).
    sources: Object.fromEntries(readdirSync(CONTRACTS_DIR).filter((name) => name.endsWith(".sol")).map((name) => [name, { content: readFileSync(join(CONTRACTS_DIR, name), "utf8") }])),
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solcOutput(JSON.stringify(input))) as SolcOutput;
  const problems = (output.errors ?? []).filter((error) => error.severity !== "info");
  if (problems.length > 0) throw new Error(`solc ${SOLC_VERSION}:\n${problems.map((p) => p.formattedMessage).join("\n")}`);
  const contract = output.contracts?.[file]?.[name];
  if (!contract) throw new Error(`solc produced no contract ${name} in ${file}`);
  const compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` as Hex };
  cache.set(name, compiled);
  return compiled;
}
