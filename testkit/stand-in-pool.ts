/**
 * A warm pool of stand-in MPC sessions (no engine), for MPC's run and sized exchange tested alone: each session
 * answers as the test planned, and the pool records what was asked of it, given back, freed and revealed.
 */
import type { LoopbackBridge, TcpHandle } from "../src/engine/bridge.ts";
import type { EngineExchange, EngineProver, RevealedRanges } from "../src/engine/prover.ts";
import type { ProverSession } from "../src/engine/session.ts";
import type { SessionSizes } from "../src/core/session-sizes.ts";
import { serializeRequest } from "../src/http1/request.ts";
import { EndpointSizes } from "../src/prover/mpc/pool/endpoint-sizes.ts";
import type { SessionSource } from "../src/prover/mpc/pool/pool.ts";
import type { SessionNeed } from "../src/prover/mpc/pool/size-classes.ts";
import { createTurnGate } from "../src/prover/mpc/pool/turn-gate.ts";

export const SMALL: SessionSizes = { maxSentData: 1024, maxRecvData: 2048 };
export const MIDDLE: SessionSizes = { maxSentData: 1024, maxRecvData: 8192 };
export const LARGE: SessionSizes = { maxSentData: 4096, maxRecvData: 16384 };
export const TARGET = { serverName: "api.example", address: "127.0.0.1", port: 443 };

/**
 * What a stand-in session's exchange does: answer with this many bytes, overflow its session at this many (in the
 * engine's words), fail with other words of the engine's, or never end (`hang`).
 */
export type Outcome = { answerBytes: number } | { overflowAt: number } | { engineError: string } | { hang: true };

/** A pool whose sessions answer as `outcomes` say, one per session taken, recording what was asked and given back. */
export function standInPool(outcomes: Outcome[]) {
  const acquired: { need: SessionNeed; session: ProverSession }[] = [];
  const released: string[] = [];
  const freed: string[] = [];
  const abandoned: string[] = [];
  const revealed: RevealedRanges[] = [];
  const tcpClosed: string[] = [];
  let opened = 0;
  const sessions: SessionSource = {
    classes: [SMALL, MIDDLE, LARGE],
    defaultClass: MIDDLE,
    limits: LARGE,
    async acquire(_serverName, need) {
      const outcome = outcomes.shift();
      if (!outcome) throw new Error("the pool was asked for more sessions than the test planned");
      const id = `session-${acquired.length + 1}`;
      const engine = standInEngine(need.setup, outcome, { freed: () => freed.push(id), abandoned: () => abandoned.push(id), revealed: (r) => revealed.push(r) });
      const session: ProverSession = { notarySessionId: id, serverName: TARGET.serverName, sizes: need.setup, closed: false, engine };
      acquired.push({ need, session });
      return session;
    },
  } as SessionSource;
  const bridge = {
    openTcp: () => {
      opened += 1;
      const url = `ws://tcp/${opened}`;
      // A target that took the connection and answered part of the exchange.
      return { url, state: { connected: true, bytesFromTarget: 300 }, responseTimeoutMs: 1_000, close: () => void tcpClosed.push(url) } as unknown as TcpHandle;
    },
  } as unknown as LoopbackBridge;
  const gate = createTurnGate(1);
  const endpointSizes = new EndpointSizes(16);
  const deps = {
    sessions,
    bridge,
    mpcNotary: { release: async (id: string) => void released.push(id) },
    endpointSizes,
    exchanges: gate,
    connectTimeoutMs: 1_000,
    responseTimeoutMs: 1_000,
  };
  return { deps, acquired, released, freed, abandoned, revealed, tcpClosed, gate, endpointSizes, tcpOpened: () => opened };
}

interface EngineRecords {
  freed(): void;
  abandoned(): void;
  revealed(ranges: RevealedRanges): void;
}

/** An engine prover that sends the request's own bytes and answers as planned. */
function standInEngine(sizes: SessionSizes, outcome: Outcome, records: EngineRecords): EngineProver {
  return {
    setup: async () => {},
    async sendRequest(_tcpUrl, request): Promise<EngineExchange> {
      if ("hang" in outcome) return new Promise<never>(() => {});
      if ("engineError" in outcome) throw new Error(outcome.engineError);
      if ("overflowAt" in outcome) {
        const current = sizes.maxRecvData - 100;
        // The engine's own words (tlsn-wasm alpha.12).
        throw new Error(`attempted to receive more data than was configured, increase \`max_recv\` in the config: current=${current}, additional=${outcome.overflowAt - current}, max=${sizes.maxRecvData}`);
      }
      return { sent: serializeRequest(request), recv: new Uint8Array(outcome.answerBytes), response: { status: 200, headers: [] } };
    },
    reveal: async (ranges) => void records.revealed(ranges),
    free: records.freed,
    abandon: records.abandoned,
  };
}

/** The need of a session of these sizes, as the default class would make it. */
export const needOf = (sizes: SessionSizes): SessionNeed => ({ class: sizes, fits: sizes, setup: sizes, reason: "default" });

/** Whether the turn gate is free again: a caller gets in at once. */
export async function gateIsFree(gate: ReturnType<typeof createTurnGate>): Promise<boolean> {
  return await Promise.race([gate.enter().then((leave) => (leave(), true)), Bun.sleep(50).then(() => false)]);
}
