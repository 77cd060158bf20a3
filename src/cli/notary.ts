import { readFileSync } from "node:fs";
import { defineCommand } from "citty";
import { AppError } from "../core/errors.ts";
import * as v from "valibot";
import { describeIssue } from "../core/schema.ts";
import type { Proof } from "../proof/format.ts";
import { proofSchema } from "../proof/proof-schema.ts";
import { registryCalldata, registryCalls } from "../proof/registry-calldata.ts";
import { cliIo } from "./io.ts";
import { optionValues } from "./option-values.ts";
import keygen from "./keygen.ts";

const start = defineCommand({
  meta: { name: "start", description: "Start a notary server (YAML config in the shape of TLSNotary's notary-server)" },
  args: {
    config: { type: "string", valueHint: "file", required: true, description: "Path to notary.yaml" },
  },
  async run({ args }) {
    // Loaded when run: help and completion list this command without loading the engine or the server.
    await (await import("./notary-start.ts")).startNotary(args.config);
  },
});

/** Reads a proof file as the proof format says it is (its shape only: `slash` needs no notary key pinned). */
function proofFile(path: string): Proof {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new AppError("file_unreadable", `cannot read the proof ${path}: ${(error as Error).message}`);
  }
  const parsed = v.safeParse(proofSchema, value);
  if (!parsed.success) throw new AppError("proof_invalid", `${path}: ${describeIssue(parsed.issues[0], {})}`);
  return parsed.output;
}

const calldata = defineCommand({
  meta: {
    name: "calldata",
    description:
      "Print the calldata of a call to contracts/NotaryRegistry.sol, for any wallet or tool to send: register (send it from the notary's attestation address, /info's ethereumAddress, with the stake as value), exit, withdraw, or slash with two proofs of one notary's two different statements for one request id",
  },
  args: {
    call: { type: "positional", description: `one of ${registryCalls.join(", ")}`, required: true },
    proof: { type: "string", valueHint: "file", description: "slash: a proof file (give it twice)" },
  },
  async run({ args, rawArgs }) {
    const call = registryCalls.find((name) => name === args.call);
    if (!call) throw new AppError("usage", `the call must be one of ${registryCalls.join(", ")}`);
    const proofs = optionValues(rawArgs, "proof").map(proofFile);
    if (call !== "slash" && proofs.length > 0) throw new AppError("usage", `${call} takes no proof`);
    await cliIo().stdout.write(`${registryCalldata(call, proofs)}\n`);
  },
});

export default defineCommand({
  meta: { name: "notary", description: "The notary: the other party of MPC-TLS sessions, signing what it verified" },
  subCommands: { start, keygen, calldata },
});
