#!/usr/bin/env bun
import "./src/cli/plain-output.ts";
import { runCommandLine } from "./src/cli/main.ts";
import { redirectSpawnSnippet } from "./src/engine/spawn-snippet.ts";

// From sources the engine runs the same thread entry as in the binary; this must come before it loads.
redirectSpawnSnippet();

// Exit explicitly: the engine's module keeps a message listener on the global scope, which would hold the process open.
process.exit(await runCommandLine(process.argv.slice(2)));
