/**
 * Replaces tlsn-wasm's thread-spawn snippet (src/engine/spawn-snippet.ts sends its import here). The snippet makes
 * workers from files next to itself, which do not exist in a binary, and never frees a finished thread's memory;
 * this starts our own worker entry instead. Same contract: start the spawner, resolve when it is ready.
 */
import { IN_BINARY } from "./spawn-snippet.ts";

// Inside a binary every module lives under the virtual root, at its path relative to the build's root;
// both the main chunk and the worker chunk import this module, so the URL is taken from that root.
const BINARY_ROOT = import.meta.url.slice(0, import.meta.url.indexOf("/$bunfs/root/") + "/$bunfs/root/".length);
export const WORKER_URL = IN_BINARY ? new URL("src/engine/worker.js", BINARY_ROOT).href : new URL("./worker.ts", import.meta.url).href;

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
