import type { SessionSizes } from "../protocol/notary.ts";

/** The engine's memory model, from measurements (BENCHMARKS.md, "Proof pipeline"). */

const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

/**
 * Engine (wasm) memory one set-up session holds, prover and embedded notary side together (one instance),
 * as measured with tlsn-wasm alpha.12 (BENCHMARKS.md, "Proof pipeline"): 574 MiB more per session at
 * 1024/4096 bytes, 1281 MiB at 4096/16384. Freed sessions' memory is reused, but the instance never shrinks.
 */
export function sessionEngineBytes(sizes: SessionSizes): number {
  return 345 * MiB + (sizes.maxSentData + sizes.maxRecvData) * 47 * KiB;
}

/**
 * The notary's share of that (its Verifier): measured with engine hosts, two warm 4096/16384 sessions held
 * 1.50 GB in the embedded notary's engine and 0.81 GB in each prover's host. An embedded notary holds this for
 * every session of every host in its one engine.
 */
export const verifierEngineBytes = (sizes: SessionSizes): number => 0.6 * sessionEngineBytes(sizes);

/** Resident memory grows faster than the engine's (1.4 GiB per 1024/4096 session, 1.9 GiB per 4096/16384). */
export const sessionResidentBytes = (sizes: SessionSizes): number => 2.5 * sessionEngineBytes(sizes);

/** The engine's memory that stays after the first session: code, thread stacks, buffers. */
export const ENGINE_BASE_BYTES = 320 * MiB;
/** A wasm32 instance cannot pass 4 GiB. */
export const WASM_LIMIT_BYTES = 4 * GiB;

