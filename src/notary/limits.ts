/**
 * Limits of the notary's sockets and routes, derived from what an honest prover sends (measured with
 * tlsn-wasm alpha.12 by scripts/mpc-traffic.ts, sessions 1024/2048, 1024/8192 and 4096/16384; BENCHMARKS.md):
 * - the engine writes its MPC stream in WebSocket messages of at most 16 KiB, at every size;
 * - a whole session sends the prover about 3.4 MB, at every size;
 * - the prover sends the notary 34 MB at 1024 sent bytes and 74 MB at 4096: about 21 MB plus 13 KB per
 *   byte of `maxSentData` (the receive size changed nothing).
 */
import type { SessionSizes } from "../core/session-sizes.ts";
import { MAX_PATTERN_LENGTH, MAX_REDACTIONS } from "../protocol/notary.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** Largest WebSocket message accepted from a prover: four times the engine's largest. */
export const MAX_MPC_MESSAGE_BYTES = 64 * KiB;

/**
 * Bytes queued towards one prover that does not read; past it the socket is closed and the session fails.
 * Several times a whole session's traffic in that direction, so an honest session never comes near it.
 */
export const MPC_BACKLOG_BYTES = 16 * MiB;

/**
 * Most bytes a prover may send in one session of these sizes: twice the measured volume. A prover sending
 * more is not running the protocol and its session ends.
 */
export const mpcBudgetBytes = (sizes: SessionSizes): number => 2 * (21 * MiB + 13 * KiB * sizes.maxSentData);

/**
 * Largest JSON body of the notary's routes. An attestation request is the largest: its patterns, plus spans
 * that are non-empty byte ranges of the transcript (64 bytes of JSON per transcript byte is far more than a
 * declaration can use).
 */
export const maxJsonBodyBytes = (limits: SessionSizes): number =>
  64 * KiB + 2 * MAX_REDACTIONS * MAX_PATTERN_LENGTH + 64 * (limits.maxSentData + limits.maxRecvData);

/** A non-WebSocket connection silent this long is closed (the MPC WebSocket has no idle limit). */
export const IDLE_TIMEOUT_S = 10;

/** Largest proxy-mode attestation body: its keys, patterns and the spans of an answer of a few MiB. */
export const PROXY_ATTESTATION_MAX_BYTES = 4 * MiB;
