/** The command line's tree, and its run from the words after `cli` to the exit status (index.ts exits with it). */
import { defineCommand } from "citty";
import { VERSION_TEXT } from "../base/version.ts";
import { addCompletion, completeCommand } from "./completion.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./run.ts";

// Sub-commands load lazily: `cli verify` must not pay for the engine or the servers.
export const main = defineCommand({
  meta: { name: "cli", version: VERSION_TEXT, description: "tlsproof: a proving proxy over MPC-TLS" },
  subCommands: {
    prover: () => import("./prover.ts").then((m) => m.default),
    notary: () => import("./notary.ts").then((m) => m.default),
    verify: () => import("./verify.ts").then((m) => m.default),
    prove: () => import("./prove.ts").then((m) => m.default),
    testca: () => import("./testca.ts").then((m) => m.default),
    demo: () => import("./demo.ts").then((m) => m.default),
    complete: completeCommand,
  },
});

/** Runs `cli <args>`; its output goes to `io` (the process's streams unless a test gives others). */
export async function runCommandLine(args: string[], io?: CliIo): Promise<number> {
  // The prover starts its engine hosts as `cli engine-host`: not a user command, so not in help or completion.
  if (args[0] === "engine-host") return runCli((await import("./engine-host.ts")).default, args.slice(1), io);
  await addCompletion(main, args);
  return runCli(main, args, io);
}
