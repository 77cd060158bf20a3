import type { LoopbackBridge, TcpHandle } from "../../engine/bridge.ts";
import type { ExchangeRequest } from "../../core/exchange.ts";
import { type EngineExchange, type ProverSession, closeProverSession, sendRequest } from "../../engine/session.ts";
import { AppError } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import type { EndpointSizes } from "./pool/endpoint-sizes.ts";
import type { SessionSource } from "./pool/pool.ts";
import { type RunControl, within } from "../proving/run-control.ts";
import { type MpcNotary, discardSession } from "./notary-sessions.ts";
import { type Overflow, type SessionNeed, classForRepeat, className } from "./pool/size-classes.ts";
import type { TurnGate } from "./pool/turn-gate.ts";

export interface SizedExchangeDeps {
  sessions: SessionSource;
  bridge: LoopbackBridge;
  mpcNotary: Pick<MpcNotary, "release">;
  endpointSizes: EndpointSizes;
  /**
   * Exchanges with targets take turns (PROVER_CONCURRENT_EXCHANGES): a request waits holding its session and
   * connects only when its turn comes, so a target never waits on a handshake slowed by another exchange.
   */
  exchanges: Pick<TurnGate, "enter">;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
}

/** How the session for an exchange is sized, and whether a too-small guess may be repeated. */
export interface Sizing {
  need: SessionNeed;
  /** `endpointKey` of the request: its answer size is learned under it. */
  endpoint: string;
  /** A GET with repeats on: an answer that overflowed the session is fetched once more in a class that fits. */
  canRepeat: boolean;
}

export interface SizedExchange {
  session: ProverSession;
  exchange: EngineExchange;
  /** The class of the session that carried the exchange. */
  sizes: SessionSizes;
  /** Set when the first session was too small and the exchange was repeated in this class. */
  repeatedIn?: SessionSizes;
}

const isOverflow = (value: unknown): value is Overflow =>
  typeof value === "object" && value !== null && ((value as Overflow).direction === "recv" || (value as Overflow).direction === "sent");

/** What the engine said about an exchange that did not fit its session, if that is why it failed. */
function overflowOf(error: unknown): Overflow | undefined {
  if (!(error instanceof AppError) || error.code !== "response_too_large") return undefined;
  const overflow = error.details?.overflow;
  return isOverflow(overflow) ? overflow : undefined;
}

/** What a run holds while it exchanges: what its abandonment must cut. */
export interface ExchangeHolder {
  session?: ProverSession;
  tcp?: TcpHandle;
}

/**
 * Takes a session sized for the exchange and runs it. When the answer overflows, its size (as far as the
 * engine saw it) is learned; a repeatable request is then run once more in the class that fits.
 */
export async function runSizedExchange(
  deps: SizedExchangeDeps,
  run: RunControl,
  holder: ExchangeHolder,
  target: { serverName: string; address: string; port: number },
  request: ExchangeRequest,
  sizing: Sizing,
  log: Logger,
): Promise<SizedExchange> {
  let need = sizing.need;
  for (let attempt = 1; ; attempt++) {
    const session = (holder.session = await within(run, deps.sessions.acquire(target.serverName, need, run.signal, run.deadlineAt), (late) =>
      discardSession(deps.mpcNotary, late),
    ));
    const leave = await within(run, deps.exchanges.enter(run.signal), (late) => late());
    const tcp = (holder.tcp = deps.bridge.openTcp({
      hostname: target.address,
      port: target.port,
      connectTimeoutMs: deps.connectTimeoutMs,
      responseTimeoutMs: deps.responseTimeoutMs,
    }));
    try {
      // Abandoned mid-exchange, the session is closed by sendRequest's own failure path or else right here.
      const exchange = await within(run, sendRequest(session, tcp, request), () => closeProverSession(session));
      deps.endpointSizes.learn(sizing.endpoint, exchange.recv.length);
      return { session, exchange, sizes: session.sizes, repeatedIn: attempt > 1 ? session.sizes : undefined };
    } catch (error) {
      const overflow = run.failure ? undefined : overflowOf(error);
      if (overflow?.direction === "recv" && overflow.atLeastBytes !== undefined) deps.endpointSizes.learn(sizing.endpoint, overflow.atLeastBytes);
      const next = overflow && sizing.canRepeat && attempt === 1 ? classForRepeat(deps.sessions.classes, session.sizes, overflow) : null;
      if (!next) throw error;
      discardSession(deps.mpcNotary, session);
      holder.session = undefined;
      holder.tcp = undefined;
      log.info("the answer did not fit its session: repeating the GET once in a bigger class", {
        host: target.serverName,
        from: className(session.sizes),
        to: className(next),
        direction: overflow!.direction,
        atLeastBytes: overflow!.atLeastBytes,
      });
      need = { class: next, fits: next, setup: next, reason: "learned" };
    } finally {
      leave();
    }
  }
}
