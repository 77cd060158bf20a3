/**
 * One proxy-mode proof, from the request id's claim to its outcome: the notary connects to the target, the
 * prover's own TLS client talks through the notary's relay, the answer goes back to the client at once, then
 * the keys are revealed and the notary signs what it decrypted. No MPC session, no engine. Every way out
 * settles the id once, through ProofDelivery; HTTP is the caller's business (proxy.ts).
 */
import type { AnswerHead, ExchangeRequest } from "../../core/exchange.ts";
import { AppError, errorText, toAppError } from "../../errors.ts";
import { messageComplete, parseHttpMessage } from "../../http1/message.ts";
import { serializeRequest } from "../../http1/request.ts";
import type { Logger } from "../../log.ts";
import type { ProofOutcome } from "../../proof/outcome.ts";
import type { RedactionResult } from "../../redaction/index.ts";
import { keysToReveal } from "../../tls/verify-session.ts";
import { refuseEncodedAnswer } from "../exchange/answer-encoding.ts";
import type { SessionSlots } from "../exchange/capacity.ts";
import type { NotaryClient } from "../notary/client.ts";
import { type ProofDelivery, failureOutcome } from "../delivery/proof-delivery.ts";
import { type ProofChoices, planProof } from "../mpc/session-lifecycle.ts";
import { type TargetPolicy, checkTargetAllowed } from "../../core/target-policy.ts";
import type { Target } from "../../core/target.ts";
import { declaredForHiddenRequest } from "./hidden-request.ts";
import { type RelaySocket, openRelaySocket } from "./relay-socket.ts";
import { type TlsExchange, runTlsExchange } from "./tls-exchange.ts";

export interface ProxyModeDeps {
  notary: NotaryClient;
  delivery: ProofDelivery;
  policy: TargetPolicy;
  /** Proxy proofs at once (PROVER_PROXY_MAX_SESSIONS). */
  proxySlots: SessionSlots;
  /** Answer bytes proxy proofs may hold at once (PROVER_PROXY_INFLIGHT_BYTES): each reserves its `maxRecvBytes`. */
  answerBytes: SessionSlots;
  /** The roots the prover's TLS client trusts: the notary's set. */
  trustAnchorsPem: readonly string[];
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  log: Logger;
}

export interface ProxyProofRequest extends ProofChoices {
  requestId: string;
  target: Target;
  exchange: ExchangeRequest;
  /** `T-PROXY-REVEAL: request`: the client keys are revealed too and the request enters the proof. */
  revealRequest: boolean;
  /** Most answer bytes (T-MAX-RECV-DATA, else PROVER_PROXY_MAX_RECV_DATA), reserved until the proof is made. */
  maxRecvBytes: number;
  /** Which of the two set maxRecvBytes, for the refusal's message. */
  maxRecvSetting: "T-MAX-RECV-DATA" | "PROVER_PROXY_MAX_RECV_DATA";
  /** The digest of the caller's API key, recorded with the id (scoped keys read only their own proofs). */
  requestedBy?: string;
}

export interface ProxyAnswer {
  response: AnswerHead;
  recv: Uint8Array;
  proofFollows: boolean;
}

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/** The status and headers of the answer, as the MPC engine reports them. */
function responseHead(recv: Uint8Array): AnswerHead {
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

/** Runs the exchange and answers as soon as the target has; the proof follows in the background. */
export async function runProxyProof(deps: ProxyModeDeps, request: ProxyProofRequest): Promise<ProxyAnswer> {
  const { requestId, target } = request;
  const release = takePlace(deps, request.maxRecvBytes);
  try {
    await deps.delivery.claim(requestId, request.requestedBy);
  } catch (error) {
    release();
    throw error;
  }
  const log = deps.log.child({ requestId, mode: "proxy" });
  let sessionId: string | undefined;
  let relay: RelaySocket | undefined;
  let proving = false;
  try {
    checkTargetAllowed(target, deps.policy);
    sessionId = await deps.notary.createProxySession({ serverName: target.serverName, port: target.port });
    relay = await openRelaySocket(deps.notary.relayUrl(sessionId), deps.connectTimeoutMs);
    const exchange = await runTlsExchange(relay.duplex, {
      serverName: target.serverName,
      request: serializeRequest(request.exchange),
      trustAnchorsPem: deps.trustAnchorsPem,
      maxRecvBytes: request.maxRecvBytes,
      maxRecvSetting: request.maxRecvSetting,
      responseTimeoutMs: deps.responseTimeoutMs,
    });
    // The notary cut the relay (a limit, a timeout): whatever came is no whole answer, even if it reads as one.
    const cut = relay.endedByNotary();
    if (cut) throw cut;
    const response = responseHead(exchange.recv);
    refuseEncodedAnswer(exchange.recv);
    log.info("target answered", { status: response.status, sent: exchange.sent.length, recv: exchange.recv.length });
    const plan = planProof(request, { ...exchange, response });
    if ("refusal" in plan) {
      await deps.delivery.settle(requestId, failureOutcome(requestId, plan.refusal));
    } else {
      proving = true;
      // The work keeps the key log, not the exchange: the answer is freed once the client has it.
      void prove(deps, { sessionId, relay, keylog: exchange.keylog, redaction: plan.redaction, request, log }).finally(release);
    }
    return { response, recv: exchange.recv, proofFollows: proving };
  } catch (error) {
    // A relay the notary ended (a limit, a timeout) breaks the exchange; the notary's reason says more than the break.
    const failure = relay?.endedByNotary() ?? toAppError(error, "session_failed");
    const cause = failure.cause === undefined ? {} : { cause: errorText(failure.cause).slice(0, 300) };
    log.warn("proxy request failed", { code: failure.code, error: failure.message, ...cause });
    await deps.delivery.settle(requestId, failureOutcome(requestId, failure));
    throw failure;
  } finally {
    if (!proving) {
      relay?.close();
      if (sessionId) void deps.notary.releaseProxy(sessionId);
      release();
    }
  }
}

interface ProofWork {
  sessionId: string;
  relay: RelaySocket;
  keylog: TlsExchange["keylog"];
  redaction: RedactionResult;
  request: ProxyProofRequest;
  log: Logger;
}

/** Reveals the keys once the relay is over, has the notary check and sign, and settles the id. */
async function prove(deps: ProxyModeDeps, work: ProofWork): Promise<void> {
  const { requestId, revealRequest } = work.request;
  const started = performance.now();
  let outcome: ProofOutcome;
  try {
    work.relay.close();
    const keys = keysToReveal(work.keylog, work.relay.handshakeBytes(), revealRequest);
    const redactions = revealRequest ? work.redaction.declared : declaredForHiddenRequest(work.redaction.declared);
    const proof = await deps.notary.attestProxy(work.sessionId, { requestId, keys, redactions, revealRequest });
    outcome = { event: "proof", proof };
  } catch (error) {
    outcome = failureOutcome(requestId, toAppError(error, "session_failed"));
    void deps.notary.releaseProxy(work.sessionId);
  }
  const delivered = await deps.delivery.settle(requestId, outcome);
  if (delivered.event === "proof") work.log.info("proof made", { ms: Math.round(performance.now() - started) });
  else work.log.warn("proof failed", { code: delivered.code, error: delivered.message });
}
