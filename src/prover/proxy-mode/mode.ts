/**
 * Proving in proxy mode (src/prover/proving/mode.ts): the notary connects to the target, the prover's own TLS client
 * talks through the notary's relay, and once the answer is the client's the prover reveals the keys of what the
 * proof shows and the notary signs what it decrypted. No MPC session, no engine.
 */
import type { AnswerHead } from "../../core/exchange.ts";
import { type TargetPolicy, checkTargetAllowed } from "../../core/target-policy.ts";
import { AppError } from "../../errors.ts";
import { messageComplete, parseHttpMessage } from "../../http1/message.ts";
import { serializeRequest } from "../../http1/request.ts";
import type { Logger } from "../../log.ts";
import { BUILT_IN_MODES } from "../../proof/modes.ts";
import type { ProxySessionRequest } from "../../protocol/proxy-mode.ts";
import type { RedactionResult } from "../../redaction/index.ts";
import { keysToReveal } from "../../tls/verify-session.ts";
import type { SessionSlots } from "../exchange/capacity.ts";
import { withinLimits } from "../exchange/requested-sizes.ts";
import type { NotaryClient } from "../notary/client.ts";
import type { ModeAttestation, ModeExchange, ModeRun, ProofCall, ProvingMode } from "../proving/mode.ts";
import type { RunControl } from "../proving/run-control.ts";
import { declaredForHiddenRequest, refuseRequestPatterns } from "./hidden-request.ts";
import { type RelaySocket, openRelaySocket } from "./relay-socket.ts";
import { type TlsExchange, runTlsExchange } from "./tls-exchange.ts";

export interface ProxyModeDeps {
  notary: Pick<NotaryClient, "createSession" | "socketUrl" | "release">;
  policy: TargetPolicy;
  /** Proxy proofs at once (PROVER_PROXY_MAX_SESSIONS). */
  proxySlots: SessionSlots;
  /** Answer bytes proxy proofs may hold at once (PROVER_PROXY_INFLIGHT_BYTES): each reserves its `maxRecvBytes`. */
  answerBytes: SessionSlots;
  /** Most answer bytes (PROVER_PROXY_MAX_RECV_DATA); a client may announce less (T-MAX-RECV-DATA). */
  maxRecvData: number;
  /** The roots the prover's TLS client trusts: the notary's set. */
  trustAnchorsPem: readonly string[];
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  /** The longest a call may take, its proof included: a proxy session's lifetime at the notary. */
  sessionTimeoutMs: number;
}

/** Most answer bytes of one call, and which setting fixed it (named in the refusal). */
interface AnswerAllowance {
  maxRecvBytes: number;
  maxRecvSetting: "T-MAX-RECV-DATA" | "PROVER_PROXY_MAX_RECV_DATA";
}

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/** The status and header fields of the answer, once it is one whole HTTP/1.1 answer. */
function answerHead(recv: Uint8Array): AnswerHead {
  const message = parseHttpMessage(recv);
  const latin1 = new TextDecoder("latin1");
  const text = new TextDecoder();
  const status = STATUS_LINE.exec(latin1.decode(recv.subarray(message.startLine.start, message.startLine.end)))?.[1];
  if (!status) throw new AppError("target_request_failed", "the target's answer is not an HTTP/1.1 response");
  // The connection may end early (the target, or a notary's relay limit): a cut answer is no answer.
  if (!messageComplete(recv)) throw new AppError("target_request_failed", "the connection ended before the target's answer did");
  const headers = message.headers.map(({ name, value }): [string, string] => [
    latin1.decode(recv.subarray(name.start, name.end)),
    text.decode(recv.subarray(value.start, value.end)),
  ]);
  return { status: Number(status), headers };
}

/**
 * A proxy proof's place: one of PROVER_PROXY_MAX_SESSIONS, and room for the most answer bytes it may hold. The
 * answer's size is known only once it arrived, and the request has reached the target by then: an exchange that
 * outgrew a smaller reservation could only be cut after the target acted (a POST done, no answer). So the whole
 * allowance is reserved before anything is sent, and a request without room is refused at once (503, Retry-After:
 * safe to repeat, nothing was sent) rather than queued (a queue would hold connections and need its own bounds).
 */
function takePlace(deps: ProxyModeDeps, answerBytes: number): () => void {
  const releaseSlot = deps.proxySlots.take();
  try {
    const releaseBytes = deps.answerBytes.take(answerBytes);
    return () => {
      releaseSlot();
      releaseBytes();
    };
  } catch (error) {
    releaseSlot();
    throw error;
  }
}

class ProxyRun implements ModeRun {
  private readonly release: () => void;
  private sessionId?: string;
  private relay?: RelaySocket;
  /** What the reveal needs of the exchange: its key log, not its bytes (the answer is freed once the client has it). */
  private keylog: TlsExchange["keylog"] = [];
  private discarded = false;

  constructor(
    private readonly deps: ProxyModeDeps,
    control: RunControl,
    private readonly call: ProofCall,
    private readonly allowance: AnswerAllowance,
  ) {
    this.release = takePlace(deps, allowance.maxRecvBytes);
    control.signal.addEventListener("abort", () => this.discard(), { once: true });
  }

  async exchange(_log: Logger): Promise<ModeExchange> {
    const { target } = this.call;
    checkTargetAllowed(target, this.deps.policy);
    const request: ProxySessionRequest = { serverName: target.serverName, port: target.port };
    this.sessionId = await this.deps.notary.createSession("proxy", request);
    this.relay = await openRelaySocket(this.deps.notary.socketUrl("proxy", this.sessionId), this.deps.connectTimeoutMs);
    const exchange = await runTlsExchange(this.relay.duplex, {
      serverName: target.serverName,
      request: serializeRequest(this.call.exchange),
      trustAnchorsPem: this.deps.trustAnchorsPem,
      ...this.allowance,
      responseTimeoutMs: this.deps.responseTimeoutMs,
    });
    // The notary cut the relay (a limit, a timeout): whatever came is no whole answer, even if it reads as one.
    const cut = this.relay.endedByNotary();
    if (cut) throw cut;
    this.keylog = exchange.keylog;
    return { answer: answerHead(exchange.recv), sent: exchange.sent, recv: exchange.recv, notarySessionId: this.sessionId };
  }

  /** Once the relay is over: the keys of what the proof shows, and the redactions without the request's when it stays hidden. */
  async reveal(redaction: RedactionResult): Promise<ModeAttestation> {
    const { relay } = this;
    if (!relay) throw new AppError("internal", "a proxy-mode reveal before its exchange");
    relay.close();
    const { revealRequest } = this.call;
    const keys = keysToReveal(this.keylog, relay.handshakeBytes(), revealRequest);
    const redactions = revealRequest ? redaction.declared : declaredForHiddenRequest(redaction.declared);
    return { redactions, fields: { keys, revealRequest } };
  }

  /** A relay the notary ended (a limit, a timeout) breaks the exchange; the notary's reason says more than the break. */
  failure(): AppError | undefined {
    return this.relay?.endedByNotary();
  }

  discard(): void {
    this.relay?.close();
    if (this.sessionId && !this.discarded) void this.deps.notary.release("proxy", this.sessionId);
    this.discarded = true;
  }

  end(): void {
    this.relay?.close();
    this.release();
  }
}

export function proxyProvingMode(deps: ProxyModeDeps): ProvingMode {
  return {
    facts: BUILT_IN_MODES.proxy,
    prepare(call) {
      // Without T-PROXY-REVEAL the request is hidden whole from the notary: a pattern naming it is refused up front.
      if (!call.revealRequest) refuseRequestPatterns(call.patterns);
      // No session to size: T-MAX-RECV-DATA bounds the answer, and so what the proof reserves.
      const announced = withinLimits(call.announced, { maxSentData: Number.MAX_SAFE_INTEGER, maxRecvData: deps.maxRecvData }).maxRecvData;
      const allowance: AnswerAllowance =
        announced === undefined
          ? { maxRecvBytes: deps.maxRecvData, maxRecvSetting: "PROVER_PROXY_MAX_RECV_DATA" }
          : { maxRecvBytes: announced, maxRecvSetting: "T-MAX-RECV-DATA" };
      return { deadlineMs: deps.sessionTimeoutMs, start: (control) => new ProxyRun(deps, control, call, allowance) };
    },
  };
}
