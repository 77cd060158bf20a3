/**
 * Compiles contracts/*.sol with solc from npm (pinned in package.json), at test time: no build artifact is
 * committed, so what runs is always what the source says.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import solc from "solc";
import type { Abi, Hex } from "viem";
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

/** Compiles `contracts/<name>.sol` and returns contract `name`; any warning fails, like an error. */
export function compileContract(name: string): CompiledContract {
  const cached = cache.get(name);
  if (cached) return cached;
  const file = `${name}.sol`;
  const input = {
    language: "Solidity",
    sources: { [file]: { content: readFileSync(join(CONTRACTS_DIR, file), "utf8") } },
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const problems = (output.errors ?? []).filter((error) => error.severity !== "info");
  if (problems.length > 0) throw new Error(`solc ${solc.version()}:\n${problems.map((p) => p.formattedMessage).join("\n")}`);
  const contract = output.contracts?.[file]?.[name];
  if (!contract) throw new Error(`solc produced no contract ${name} in ${file}`);
  const compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` as Hex };
  cache.set(name, compiled);
  return compiled;
}
