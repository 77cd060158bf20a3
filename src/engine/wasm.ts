// @ts-expect-error: typed by the package as wasm exports, but imported as a file it is a path (inside a
// compiled binary, a $bunfs path): that is how the binary embeds the wasm.
import wasmPath from "tlsn-wasm/tlsn_wasm_bg.wasm" with { type: "file" };
import init, { initialize } from "tlsn-wasm";
import { patchTrustAnchor } from "./trust-anchor.ts";

export interface EngineOptions {
  /** Worker threads for the MPC rayon pool. */
  threads: number;
  /** PEM of a test CA that replaces one built-in root (offline tests only). */
  testTrustAnchorPem?: string;
}

export interface EngineInfo {
  threads: number;
  testTrustAnchor: boolean;
}

let started: Promise<EngineInfo> | undefined;
let memory: WebAssembly.Memory | undefined;

/** Bytes of the engine's linear memory (it only grows; a wasm32 instance cannot pass 4 GiB). 0 before start. */
export const engineMemoryBytes = (): number => memory?.buffer.byteLength ?? 0;

/**
 * Loads tlsn-wasm and starts its thread pool. One wasm instance per process: the prover and an
 * embedded notary share it, so the first caller's options win and later callers get the same engine.
 */
export function startEngine(options: EngineOptions): Promise<EngineInfo> {
  started ??= (async () => {
    const original = new Uint8Array(await Bun.file(wasmPath).arrayBuffer());
    const bytes = options.testTrustAnchorPem ? patchTrustAnchor(original, options.testTrustAnchorPem) : original;
    const module = await WebAssembly.compile(bytes);
    memory = (await init({ module_or_path: module })).memory;
    await initialize({ level: "Warn", crate_filters: undefined, span_events: undefined }, options.threads);
    return { threads: options.threads, testTrustAnchor: Boolean(options.testTrustAnchorPem) };
  })();
  return started;
}
