/**
 * The engine driven directly, without the prover's server: one GET to the local target over a set-up session,
 * and revealing all of it. Used by scripts that measure the engine and by the dishonest prover.
 */
import type { LoopbackBridge } from "../src/engine/bridge.ts";
import { type EngineExchange, type ProverSession, revealTranscript, sendRequest } from "../src/engine/session.ts";
import { TARGET_HOST } from "./tls-fixture.ts";

/** MPC-TLS handshake and `GET path` to the target on loopback `port`. */
export function getFromTarget(session: ProverSession, bridge: LoopbackBridge, port: number, path = "/data"): Promise<EngineExchange> {
  const tcp = bridge.openTcp({ hostname: "127.0.0.1", port, connectTimeoutMs: 10_000, responseTimeoutMs: 30_000 });
  return sendRequest(session, tcp, {
    method: "GET",
    pathAndQuery: path,
    headers: [["host", TARGET_HOST], ["accept-encoding", "identity"], ["connection", "close"]],
    body: undefined,
  });
}

/** Reveals the whole transcript to the notary; the caller closes the session once the notary has verified. */
export const revealAll = (session: ProverSession, exchange: EngineExchange): Promise<void> =>
  revealTranscript(session, { sent: [{ start: 0, end: exchange.sent.length }], recv: [{ start: 0, end: exchange.recv.length }] });
