/** The engine's view of the notary (src/engine/session.ts, NotarySessions) over the mode-neutral client: MPC sessions. */
import { type NotarySessions, type ProverSession, closeProverSession } from "../../engine/session.ts";
import type { SessionRequest } from "../../protocol/mpc.ts";
import type { NotaryClient } from "../notary/client.ts";

/** MPC sessions as the engine and the warm pool ask for them; `isRunning` tells a warm session that is still of use. */
export interface MpcNotary extends NotarySessions {
  isRunning(sessionId: string): Promise<boolean>;
}

export function mpcNotarySessions(notary: NotaryClient): MpcNotary {
  return {
    // `clientType` is what TLSNotary's clients send; notaries accept and ignore it.
    createSession: (sizes) => notary.createSession("mpc", { clientType: "Websocket", ...sizes } satisfies SessionRequest),
    notarizeUrl: (sessionId) => notary.socketUrl("mpc", sessionId),
    release: (sessionId) => notary.release("mpc", sessionId),
    ...(notary.whileReachable && { whileReachable: <T>(sessionId: string, work: Promise<T>) => notary.whileReachable!(sessionId, work) }),
    sessionState: (sessionId) => notary.sessionState("mpc", sessionId),
    isRunning: async (sessionId) => (await notary.sessionState("mpc", sessionId)).state === "running",
  };
}

/** Ends a session that will make no proof: frees the engine's prover and the notary's slot now. */
export function discardSession(notary: Pick<MpcNotary, "release">, session: ProverSession): void {
  closeProverSession(session);
  void notary.release(session.notarySessionId);
}
