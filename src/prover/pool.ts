import { type ProverSession, setupProverSession } from "../engine/session.ts";
import type { NotaryClient, SessionSizes } from "./notary-client.ts";

/** Where /proxy gets a set-up MPC session for a target. */
export interface SessionSource {
  acquire(serverName: string): Promise<ProverSession>;
  sizes: SessionSizes;
}

/** Sets a session up when a request needs one. */
export function onDemandSessions(notary: NotaryClient, sizes: SessionSizes): SessionSource {
  return { sizes, acquire: (serverName) => setupProverSession(notary, serverName, sizes) };
}
