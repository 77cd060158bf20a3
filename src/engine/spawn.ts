/**
 * Replaces tlsn-wasm's thread-spawn snippet (src/engine/spawn-snippet.ts sends its import here). The snippet makes
 * workers from files next to itself, which do not exist in a binary, and never frees a finished thread's memory;
 * this starts our own worker entry instead. Same contract: start the spawner, resolve when it is ready.
 */
import { threadEntryUrl } from "../base/binary.ts";

export const WORKER_URL = threadEntryUrl("src/engine/worker.ts");

export async function startSpawnerWorker(module: WebAssembly.Module, memory: WebAssembly.Memory, spawner: { intoRaw(): number }) {
  const worker = new Worker(WORKER_URL, { name: "web-spawn-spawner", type: "module" } as WorkerOptions);
  const ready = new Promise<void>((resolve) => {
    const onMessage = (event: MessageEvent) => {
      if (event.data === "web_spawn_spawner_ready") {
        worker.removeEventListener("message", onMessage);
        resolve();
      }
    };
    worker.addEventListener("message", onMessage);
  });
  worker.postMessage({ type: "web_spawn_start_spawner", data: [module, memory, spawner.intoRaw()] });
  await ready;
}
