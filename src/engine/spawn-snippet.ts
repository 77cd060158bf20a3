/**
 * tlsn-wasm's thread-spawn snippet is replaced by src/engine/spawn.ts everywhere: the build redirects it in the
 * binary (where the snippet cannot work), and a run from sources redirects it at run time, so both run the same
 * worker entry (src/engine/worker.ts), which gives each finished thread's memory back to the engine.
 * This module must not load tlsn-wasm: it is what decides where the snippet import goes.
 */
import { join } from "node:path";
import { IN_BINARY } from "../base/binary.ts";

export const spawnSnippetRedirect: Bun.BunPlugin = {
  name: "tlsn-spawn-snippet",
  setup(build) {
    build.onResolve({ filter: /snippets\/web-spawn-[^/]+\/js\/spawn\.js$/ }, () => ({ path: join(import.meta.dir, "spawn.ts") }));
  },
};

/**
 * From sources: sends the snippet import to spawn.ts for what this thread loads from now on. Call it before
 * tlsn-wasm is first imported; run-time plugins hold for one thread, so the worker entry calls it too.
 */
export function redirectSpawnSnippet() {
  if (!IN_BINARY) Bun.plugin(spawnSnippetRedirect);
}
