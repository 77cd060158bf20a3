/**
 * Worker entry of the compiled binary: the thread spawner and every MPC thread run here. It handles the
 * two messages tlsn-wasm's own spawn snippet handles, with the module and shared memory it is sent.
 */
import init, { web_spawn_recover_spawner, web_spawn_start_worker } from "tlsn-wasm";
import { WORKER_URL } from "./spawn.ts";

declare const self: Worker;
/** The worker scope's close(): ends this worker thread, not the process. */
declare function close(): void;

interface SpawnMessage {
  type: "web_spawn_start_spawner" | "web_spawn_start_worker";
  data: [WebAssembly.Module, WebAssembly.Memory, number];
}

self.addEventListener("message", async (event: MessageEvent<SpawnMessage>) => {
  const message = event.data;
  if (message?.type === "web_spawn_start_spawner") {
    const [module, memory, spawnerPtr] = message.data;
    await init({ module_or_path: module, memory });
    const spawner = web_spawn_recover_spawner(spawnerPtr);
    postMessage("web_spawn_spawner_ready");
    await spawner.run(WORKER_URL);
    close();
  } else if (message?.type === "web_spawn_start_worker") {
    const [module, memory, workerPtr] = message.data;
    await init({ module_or_path: module, memory });
    web_spawn_start_worker(workerPtr);
    close();
  }
});
