/**
 * Proving in proxy mode (src/prover/proving/mode.ts): the notary connects to the target, the prover's own TLS client
 * talks through the notary's relay, and once the answer is the client's the prover reveals the keys of what the
 * proof shows and the notary signs what it decrypted. No MPC session, no engine.
 * TLS 1.3 targets get our own client (src/tls/client/), which writes the request in epochs (request-plan.ts) so that
 * the notary reads the request but its hidden values; a target that answers with TLS 1.2 is dialled again, on a new
 * relay, with `node:tls` (tls-exchange.ts; remembered for ten minutes, so later calls dial it so at once), and its
 * request stays hidden unless `T-PROXY-REVEAL: request` reveals the master secret.
 */
import type { AnswerHead } from "../../core/exchange.ts";
import type { ByteRange } from "../../core/transcript.ts";
import { type TimedMemory, timedMemory } from "../../base/timed-memory.ts";
import { type TargetPolicy, checkTargetAllowed } from "../../core/target-policy.ts";
import { AppError } from "../../core/errors.ts";
import { finalHead, messageComplete } from "../../http1/message.ts";
import type { Logger } from "../../base/log.ts";
import { BUILT_IN_MODES } from "../../proof/modes.ts";
import type { ProxySessionRequest } from "../../protocol/proxy-mode.ts";
import type { RedactionResult } from "../../redaction/index.ts";
import { duplexTransport, isTls12Target, runTls13Exchange } from "../../tls/client/exchange.ts";
import { type RevealedKeys, keysOfEpochExchange, keysToReveal } from "../../tls/verify-session.ts";
import type { SessionSlots } from "../exchange/capacity.ts";
import { withinLimits } from "../exchange/requested-sizes.ts";
import type { NotaryClient } from "../notary/client.ts";
import { type ModeAttestation, type ModeExchange, type ModeRun, type ProofCall, type ProvingMode, ownHeaders } from "../proving/mode.ts";
import { refusedQuorum } from "../proving/quorum.ts";
import type { ProvingModeBackend } from "../proving/registry.ts";
import type { RunControl } from "../proving/run-control.ts";
import { declaredForHiddenRequest } from "./hidden-request.ts";
import { type RelaySocket, openRelaySocket } from "./relay-socket.ts";
import { type RequestPlan, planRedactions, planRequest } from "./request-plan.ts";
import { runTlsExchange } from "./tls-exchange.ts";
import { PROXY_MODE_HEADERS } from "./headers.ts";

/** What proxy mode is made with beside the prover's context: its places and limits. */
export interface ProxyModeParts {
  /** Proxy proofs at once (PROVER_PROXY_MAX_SESSIONS). */
  proxySlots: SessionSlots;
  /** Answer bytes proxy proofs may hold at once (PROVER_PROXY_INFLIGHT_BYTES): each reserves its `maxRecvBytes`. */
  answerBytes: SessionSlots;
  /** Most answer bytes (PROVER_PROXY_MAX_RECV_DATA); a client may announce less (T-MAX-RECV-DATA). */
  maxRecvData: number;
  /** Most bytes of one hidden value of a request written in epochs (PROVER_PROXY_MAX_HIDDEN_SPAN). */
  maxHiddenSpanBytes: number;
  /** The longest a call may take, its proof included: a proxy session's lifetime at the notary. */
  sessionTimeoutMs: number;
}

export interface ProxyModeDeps extends ProxyModeParts {
  notary: Pick<NotaryClient, "createSession" | "openSocket" | "release">;
  policy: TargetPolicy;
  /** The roots the prover's TLS client trusts: the notary's set. */
  trustAnchorsPem: readonly string[];
  connectTimeoutMs: number;
  responseTimeoutMs: number;
}

/** Most answer bytes of one call, and which setting fixed it (named in the refusal). */
interface AnswerAllowance {
  maxRecvBytes: number;
  maxRecvSetting: "T-MAX-RECV-DATA" | "PROVER_PROXY_MAX_RECV_DATA";
}

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/** The status and header fields of the answer (after any interim heads), once it is one whole HTTP/1.1 answer. */
function answerHead(recv: Uint8Array): AnswerHead {
  const head = finalHead(recv);
  // One char per byte: TextDecoder's "latin1" is windows-1252, and UTF-8 would change a value's bytes on their way on.
  const latin1 = (range: ByteRange) => Buffer.from(recv.buffer, recv.byteOffset + range.start, range.end - range.start).toString("latin1");
  const status = STATUS_LINE.exec(latin1(head.startLine))?.[1];
  if (!status) throw new AppError("target_request_failed", "the target's answer is not an HTTP/1.1 response");
  // The connection may end early (the target, or a notary's relay limit): a cut answer is no answer.
  if (!messageComplete(recv)) throw new AppError("target_request_failed", "the connection ended before the target's answer did");
  return { status: Number(status), headers: head.headers.map(({ name, value }): [string, string] => [latin1(name), latin1(value)]) };
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

/** How long a target that answered TLS 1.2 is dialled with node:tls straight away, saving a refused TLS 1.3 hello. */
const REMEMBER_TLS12_MS = 10 * 60_000;
/** Targets remembered at most. */
const REMEMBERED_TARGETS = 4096;

/** What the reveal needs of an exchange: the keys to show the notary, and whether the request stays hidden whole. */
interface Revealing {
  keys: RevealedKeys;
  requestHidden: boolean;
}

/** The exchange's bytes with what its reveal will need; the answer is freed once the client has it. */
interface Exchanged {
  sent: Uint8Array;
  recv: Uint8Array;
  revealing: Revealing;
}

/** A refused answer size names the setting that fixed the limit. */
function namingSetting(error: unknown, allowance: AnswerAllowance): unknown {
  if (!(error instanceof AppError) || error.code !== "response_too_large") return error;
  return new AppError("response_too_large", `the answer exceeds ${allowance.maxRecvBytes} bytes (${allowance.maxRecvSetting})`);
}

class ProxyRun implements ModeRun {
  private readonly release: () => void;
  private sessionId?: string;
  private relay?: RelaySocket;
  private revealing?: Revealing;
  private discarded = false;

  constructor(
    private readonly deps: ProxyModeDeps,
    control: RunControl,
    private readonly call: ProofCall,
    private readonly allowance: AnswerAllowance,
    private readonly plan: RequestPlan,
    /** Targets known to speak TLS 1.2 only, by `serverName:port`. */
    private readonly tls12Targets: TimedMemory<true>,
  ) {
    this.release = takePlace(deps, allowance.maxRecvBytes);
    control.signal.addEventListener("abort", () => this.discard(), { once: true });
  }

  async exchange(log: Logger, idClaimed: Promise<void>): Promise<ModeExchange> {
    checkTargetAllowed(this.call.target, this.deps.policy);
    const exchanged = await this.exchangeOverEitherVersion(log, idClaimed);
    // The notary cut the relay (a limit, a timeout): whatever came is no whole answer, even if it reads as one.
    const cut = this.relay?.endedByNotary();
    if (cut) throw cut;
    this.revealing = exchanged.revealing;
    return { answer: answerHead(exchanged.recv), sent: exchanged.sent, recv: exchanged.recv, notarySessionId: this.sessionId! };
  }

  /**
   * Our TLS 1.3 client first; a target that answers its hello with TLS 1.2 (nothing of the request was sent) is dialled
   * again on a new relay with node:tls, and remembered so for a while. A remembered one that now chooses TLS 1.3 with
   * node:tls is forgotten: the next call writes its request in epochs again.
   */
  private async exchangeOverEitherVersion(log: Logger, idClaimed: Promise<void>): Promise<Exchanged> {
    const { serverName, port } = this.call.target;
    const key = `${serverName.toLowerCase()}:${port}`;
    if (!this.tls12Targets.get(key)) {
      try {
        return await this.overTls13(await this.openRelay(), idClaimed);
      } catch (error) {
        if (!isTls12Target(error)) throw namingSetting(error, this.allowance);
      }
      log.info("the target speaks TLS 1.2: proving over node:tls on a new relay");
      this.tls12Targets.set(key, true, REMEMBER_TLS12_MS);
      this.dropRelay();
    }
    const exchanged = await this.overTls12(await this.openRelay(), idClaimed);
    if (exchanged.revealing.keys.version === "TLS1.3") this.tls12Targets.delete(key);
    return exchanged;
  }

  /**
   * A proxy session at the notary and its relay socket, opened while the id's claim is made (the notary only dials the
   * target meanwhile); none once the run was abandoned (a retry must not outlive it).
   */
  private async openRelay(): Promise<RelaySocket> {
    if (this.discarded) throw new AppError("session_failed", "the proxy-mode run was abandoned");
    const { target } = this.call;
    const request: ProxySessionRequest = { serverName: target.serverName, port: target.port };
    const sessionId = await this.deps.notary.createSession("proxy", request);
    this.sessionId = sessionId;
    this.relay = await openRelaySocket((listener) => this.deps.notary.openSocket("proxy", sessionId, listener, this.deps.connectTimeoutMs));
    return this.relay;
  }

  /** Ends the current relay and frees its session at the notary (the run goes on with another). */
  private dropRelay(): void {
    this.relay?.close();
    if (this.sessionId) void this.deps.notary.release("proxy", this.sessionId);
    this.relay = undefined;
    this.sessionId = undefined;
  }

  /**
   * Our TLS 1.3 client, the request in the plan's epochs; the notary gets their keys (none when the request stays hidden).
   * The handshake runs while the id's claim is made; the request waits for it.
   */
  private async overTls13(relay: RelaySocket, idClaimed: Promise<void>): Promise<Exchanged> {
    const exchange = await runTls13Exchange(duplexTransport(relay.duplex), this.plan.parts, {
      requestAfter: idClaimed,
      serverName: this.call.target.serverName,
      trustAnchorsPem: this.deps.trustAnchorsPem,
      responseTimeoutMs: this.deps.responseTimeoutMs,
      maxRecvBytes: this.allowance.maxRecvBytes,
    });
    const requestHidden = this.plan.reveal === "none";
    return { sent: exchange.sent, recv: exchange.recv, revealing: { keys: keysOfEpochExchange(exchange, !requestHidden), requestHidden } };
  }

  /**
   * node:tls for a TLS 1.2 target: its request revealed through the master secret with T-PROXY-REVEAL: request only.
   * node:tls writes the request right after its handshake: it starts once the id is claimed.
   */
  private async overTls12(relay: RelaySocket, idClaimed: Promise<void>): Promise<Exchanged> {
    await idClaimed;
    const exchange = await runTlsExchange(relay.duplex, {
      serverName: this.call.target.serverName,
      request: this.plan.request,
      trustAnchorsPem: this.deps.trustAnchorsPem,
      ...this.allowance,
      responseTimeoutMs: this.deps.responseTimeoutMs,
    });
    const requestHidden = this.plan.reveal !== "request";
    return { sent: exchange.sent, recv: exchange.recv, revealing: { keys: keysToReveal(exchange.keylog, relay.handshakeBytes(), !requestHidden), requestHidden } };
  }

  /** Once the relay is over: the keys of what the proof shows, and the redactions without the request's when it stays hidden. */
  async reveal(redaction: RedactionResult): Promise<ModeAttestation> {
    const { relay, revealing } = this;
    if (!relay || !revealing) throw new AppError("internal", "a proxy-mode reveal before its exchange");
    relay.close();
    const redactions = revealing.requestHidden ? declaredForHiddenRequest(redaction.declared) : planRedactions(this.plan, redaction.declared);
    return { redactions, fields: { keys: revealing.keys } };
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

/** Proxy mode's backend: made, as every mode is, with the prover's context. */
export const proxyModeBackend = (parts: ProxyModeParts): ProvingModeBackend => ({
  facts: BUILT_IN_MODES.proxy,
  create: (context) => proxyProvingMode({ ...parts, ...context }),
});

function proxyProvingMode(deps: ProxyModeDeps): ProvingMode {
  const tls12Targets = timedMemory<true>(REMEMBERED_TARGETS);
  return {
    facts: BUILT_IN_MODES.proxy,
    headers: PROXY_MODE_HEADERS,
    prepare(call) {
      // The request's hidden values are cut before anything is sent: a request that cannot be written so is a 400 now.
      const reveal = ownHeaders(call, PROXY_MODE_HEADERS)["t-proxy-reveal"];
      if (call.quorum > 1 && reveal === "none") throw refusedQuorum("a quorum's proofs must show one request line; T-PROXY-REVEAL: none hides it");
      const plan = planRequest(call.exchange, call.patterns, reveal, deps.maxHiddenSpanBytes);
      // No session to size: T-MAX-RECV-DATA bounds the answer, and so what the proof reserves.
      const announced = withinLimits(call.announced, { maxSentData: Number.MAX_SAFE_INTEGER, maxRecvData: deps.maxRecvData }).maxRecvData;
      const allowance: AnswerAllowance =
        announced === undefined
          ? { maxRecvBytes: deps.maxRecvData, maxRecvSetting: "PROVER_PROXY_MAX_RECV_DATA" }
          : { maxRecvBytes: announced, maxRecvSetting: "T-MAX-RECV-DATA" };
      return {
        deadlineMs: deps.sessionTimeoutMs,
        start: (control) => new ProxyRun(deps, control, call, allowance, plan, tls12Targets),
        startThrough: (control, notary) => new ProxyRun({ ...deps, notary }, control, call, allowance, plan, tls12Targets),
      };
    },
  };
}
