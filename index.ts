#!/usr/bin/env bun
import "./src/cli/plain-output.ts";
import { defineCommand } from "citty";
import { addCompletion, completeCommand } from "./src/cli/completion.ts";
import { runCli } from "./src/cli/run.ts";
import { redirectSpawnSnippet } from "./src/engine/spawn-snippet.ts";
import { VERSION_TEXT } from "./src/base/version.ts";

// From sources the engine runs the same thread entry as in the binary; this must come before it loads.
redirectSpawnSnippet();

// Sub-commands load lazily: `cli verify` must not pay for the engine or the servers.
const main = defineCommand({
  meta: { name: "cli", version: VERSION_TEXT, description: "tlsproof: a proving proxy over MPC-TLS" },
  subCommands: {
    prover: () => import("./src/cli/prover.ts").then((m) => m.default),
    notary: () => import("./src/cli/notary.ts").then((m) => m.default),
    verify: () => import("./src/cli/verify.ts").then((m) => m.default),
    prove: () => import("./src/cli/prove.ts").then((m) => m.default),
    testca: () => import("./src/cli/testca.ts").then((m) => m.default),
    demo: () => import("./src/cli/demo.ts").then((m) => m.default),
    complete: completeCommand,
  },
});

const args = process.argv.slice(2);
// The prover starts its engine hosts as `cli engine-host`: not a user command, so not in help or completion.
const exitCode =
  args[0] === "engine-host"
    ? await runCli((await import("./src/cli/engine-host.ts")).default, args.slice(1))
    : (await addCompletion(main, args), await runCli(main, args));
// Exit explicitly: the engine's module keeps a message listener on the global scope, which would hold the process open.
process.exit(exitCode);
