/**
 * What a notary says of one running session, for any mode: whether it runs, and what its socket carried. The
 * notary protocol sends it (GET /session/{id}); the engine's setup watch (src/engine/setup-watch.ts) judges by it.
 */
import * as v from "valibot";

/**
 * What a running session's socket carried so far: bytes each way and milliseconds since the last one. A notary
 * before this field existed leaves it out.
 */
export const SessionTraffic = v.object({
  fromProverBytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
  toProverBytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
  quietMs: v.pipe(v.number(), v.integer(), v.minValue(0)),
});
export type SessionTraffic = v.InferOutput<typeof SessionTraffic>;

/**
 * What the notary says of a session: `running` once its prover's socket is attached, `not_running` when it
 * answered that it is not (waiting, or ended), `unknown` when it could not be asked.
 */
export type SessionState = "running" | "not_running" | "unknown";

/** One answer of the notary: with `traffic` when the session runs and the notary counts its socket's bytes. */
export interface SessionCheck {
  state: SessionState;
  traffic?: SessionTraffic;
}
