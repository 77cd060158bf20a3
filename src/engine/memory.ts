import type { SessionSizes } from "../core/session-sizes.ts";

/** The engine's memory model, from measurements (BENCHMARKS.md, "Proof pipeline" and "Sized sessions"). */

const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

/**
 * Engine (wasm) memory one side of a set-up session holds: its prover, or its notary's Verifier. Measured with
 * tlsn-wasm alpha.12, each side in its own engine, per warm session: the prover 210 / 431 / 688 MiB and the
 * Verifier 245 / 409 / 657 MiB at 1024/1536, 2048/6144 and 4096/16384 bytes. Both sides cost about the same, so
 * one count serves both, above every measured figure. Freed sessions' memory is reused, but an instance never
 * shrinks.
 */
export function sideEngineBytes(sizes: SessionSizes): number {
  return 225 * MiB + (sizes.maxSentData + sizes.maxRecvData) * 26 * KiB;
}

/** Both sides of a session (measured in one engine: 574 MiB at 1024/4096, 1281 MiB at 4096/16384). */
export const sessionEngineBytes = (sizes: SessionSizes): number => 2 * sideEngineBytes(sizes);

/**
 * Resident memory grows faster than the engine's: measured in one process, 1.4 GiB per 1024/4096 session and
 * 1.9 GiB per 4096/16384. Twice the engine count covers both.
 */
export const sessionResidentBytes = (sizes: SessionSizes): number => 2 * sessionEngineBytes(sizes);

/** The engine's memory that stays after the first session: code, thread stacks, buffers. */
export const ENGINE_BASE_BYTES = 320 * MiB;
/** A wasm32 instance cannot pass 4 GiB. */
export const WASM_LIMIT_BYTES = 4 * GiB;
