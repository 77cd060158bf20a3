/**
 * Worker entry of every engine thread: the thread spawner and each MPC thread run here. It handles the two
 * messages tlsn-wasm's own spawn snippet handles, with the module and shared memory it is sent.
 */
import { redirectSpawnSnippet } from "./spawn-snippet.ts";
import { WORKER_URL } from "./spawn.ts";

declare const self: Worker;

interface SpawnMessage {
  type: "web_spawn_start_spawner" | "web_spawn_start_worker";
  data: [WebAssembly.Module, WebAssembly.Memory, number];
}

// Loaded after the redirect, so that this thread's tlsn-wasm imports spawn.ts rather than the snippet, whose own
// message handlers would start each thread a second time.
redirectSpawnSnippet();
const engine = import("tlsn-wasm");

// Registered at once: a message that came in while tlsn-wasm loads would otherwise be lost.
self.addEventListener("message", async (event: MessageEvent<SpawnMessage>) => {
  const message = event.data;
  if (message?.type !== "web_spawn_start_spawner" && message?.type !== "web_spawn_start_worker") return;
  const { default: init, web_spawn_recover_spawner, web_spawn_start_worker } = await engine;
  const [module, memory, pointer] = message.data;
  const exports = await init({ module_or_path: module, memory });
  if (message.type === "web_spawn_start_spawner") {
    const spawner = web_spawn_recover_spawner(pointer);
    postMessage("web_spawn_spawner_ready");
    await spawner.run(WORKER_URL);
  } else {
    web_spawn_start_worker(pointer);
    // The thread's work is over. Its stack and thread-local block (about 2 MiB in the shared memory) stay taken
    // unless the thread frees them itself; a session starts dozens of threads, so without this the engine grew
    // by tens of MiB with every session until it reached the 4 GiB a wasm instance can address.
    exports.__wbindgen_thread_destroy();
  }
  // Ends this worker thread only (Bun's worker scope has no close(): calling it threw, and the thread ended on
  // that uncaught ReferenceError, an error event per finished thread).
  process.exit(0);
});
