/**
 * One MPC call's run (src/prover/proving/mode.ts, ModeRun): its slot, its notary watch, the session it holds and the
 * target connection, and what an abandonment cuts. The engine does not notice every failure (a notary that dies
 * during MPC setup leaves it waiting), so an abandoned run cuts the target connection and the notary session, and the
 * lifecycle stops waiting for the engine.
 */
import type { TcpHandle } from "../../engine/bridge.ts";
import { type ProverSession, abandonProverSession, closeProverSession, revealTranscript } from "../../engine/session.ts";
import { AppError } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import { type RedactionResult, revealedRanges } from "../../redaction/index.ts";
import type { ModeAttestation, ModeExchange, ModeRun, ProofCall } from "../proving/mode.ts";
import type { RunControl } from "../proving/run-control.ts";
import { type TargetPolicy, resolveTarget } from "../../core/target-policy.ts";
import type { SessionSlots } from "../exchange/capacity.ts";
import type { NotaryClient } from "../notary/client.ts";
import { className } from "./pool/size-classes.ts";
import type { EngineSuiteCheck } from "./mpc-probe.ts";
import { discardSession } from "./notary-sessions.ts";
import { inProvableLayout, isProvableLayout, provableMpcHidden, unprovableLayout } from "./request-layout.ts";
import { type SizedExchange, type SizedExchangeDeps, type Sizing, runSizedExchange } from "./sized-exchange.ts";
import { declareLayout } from "../exchange/request-layout.ts";

export interface MpcRunDeps extends SizedExchangeDeps {
  /** The prover's notaries: a running session checks that its own is still there. */
  notary: Pick<NotaryClient, "reachable">;
  /** MPC sessions at once (PROVER_MAX_SESSIONS). */
  slots: SessionSlots;
  policy: TargetPolicy;
  /** Targets that cannot speak the engine's one suite are refused before any MPC work. */
  engineSuite: EngineSuiteCheck;
}

/** How often a running session checks that its notary is still there. */
const NOTARY_CHECK_MS = 2_000;
/** Failed checks in a row before the notary counts as gone (one can be a hiccup). */
const NOTARY_CHECKS_FAILED = 2;

export class MpcRun implements ModeRun {
  session?: ProverSession;
  tcp?: TcpHandle;
  private readonly releaseSlot: () => void;
  private readonly watch: Timer;
  /** The request as the engine wrote it and the answer's length, once exchanged: the reveal's ranges are of them. */
  private exchanged?: { sent: Uint8Array; recvLength: number; sessions: number };

  /** Takes a slot (or throws over_capacity) and starts watching the notary. */
  constructor(
    private readonly deps: MpcRunDeps,
    private readonly control: RunControl,
    private readonly call: ProofCall,
    private readonly sizing: Sizing,
  ) {
    this.releaseSlot = deps.slots.take();
    control.signal.addEventListener("abort", () => this.cut(), { once: true });
    let failedChecks = 0;
    this.watch = setInterval(() => {
      deps.notary.reachable(this.session?.notarySessionId).then(
        () => (failedChecks = 0),
        () => {
          failedChecks += 1;
          if (failedChecks >= NOTARY_CHECKS_FAILED) control.abandon(new AppError("notary_unavailable", "the notary went away during the session"));
        },
      );
    }, NOTARY_CHECK_MS);
  }

  async exchange(log: Logger, idClaimed: Promise<void>): Promise<ModeExchange> {
    const resolved = await resolveTarget(this.call.target, this.deps.policy);
    await this.deps.engineSuite.check(resolved);
    await idClaimed;
    const { sized, sessions } = await this.provableExchange(resolved, log);
    const { session, exchange, sizes, repeatedIn } = sized;
    this.exchanged = { sent: exchange.sent, recvLength: exchange.recv.length, sessions };
    const answerHeaders: [string, string][] = [["t-session-class", className(sizes)]];
    if (repeatedIn) answerHeaders.push(["t-session-retried", className(repeatedIn)]);
    if (sessions > 1) answerHeaders.push(["t-layout-sessions", String(sessions)]);
    return { answer: exchange.response, sent: exchange.sent, recv: exchange.recv, notarySessionId: session.notarySessionId, answerHeaders };
  }

  /**
   * The exchange, in sessions of its own until the engine lays the request out so that its hidden values can be
   * proven (request-layout.ts): a GET that may be repeated (Sizing.canRepeat, as for an answer that overflowed its
   * session), LAYOUT_SESSIONS at most; any other exchange is taken as it came.
   */
  private async provableExchange(target: Parameters<typeof runSizedExchange>[3], log: Logger): Promise<{ sized: SizedExchange; sessions: number }> {
    const { exchange: request, patterns } = this.call;
    const { result, sessions } = await inProvableLayout(() => runSizedExchange(this.deps, this.control, this, target, request, this.sizing, log), {
      provable: (sized) => isProvableLayout(sized.exchange.sent, patterns),
      canRepeat: this.sizing.canRepeat,
      discard: (sized, sessions) => {
        log.info("the engine wrote the Host header after a hidden header value: exchanging the GET again in a fresh session", { host: target.serverName, sessions });
        discardSession(this.deps.mpcNotary, sized.session);
        this.session = undefined;
        this.tcp = undefined;
      },
    });
    return { sized: result, sessions };
  }

  /**
   * Reveals everything but the hidden ranges to the notary, over the MPC session: those of the request as the engine's
   * layout proves them (request-layout.ts), declared with what the layout adds.
   */
  async reveal(redaction: RedactionResult): Promise<ModeAttestation> {
    const { session, exchanged } = this;
    if (!session || !exchanged) throw new AppError("internal", "an MPC reveal before its exchange");
    const hiddenSent = provableMpcHidden(exchanged.sent, redaction.hidden.sent);
    if (!hiddenSent) throw unprovableLayout(exchanged.sessions);
    await revealTranscript(session, {
      sent: revealedRanges(exchanged.sent.length, hiddenSent),
      recv: revealedRanges(exchanged.recvLength, redaction.hidden.recv),
    });
    return { redactions: declareLayout(redaction.declared, hiddenSent) };
  }

  discard(): void {
    // After an abandonment the session is closed already.
    if (this.session && !this.control.failure) discardSession(this.deps.mpcNotary, this.session);
  }

  end(): void {
    clearInterval(this.watch);
    if (this.session) closeProverSession(this.session);
    this.releaseSlot();
  }

  /** The run was abandoned: cut the target connection and the session, whose engine call may never end. */
  private cut(): void {
    this.tcp?.close();
    if (this.session) {
      abandonProverSession(this.session);
      void this.deps.mpcNotary.release(this.session.notarySessionId);
    }
  }
}
