import * as v from "valibot";
import { AppError, type ErrorCode, isErrorCode } from "../../errors.ts";
import type { NotarySessions } from "../../engine/session.ts";
import type { SessionCheck } from "../../core/session-traffic.ts";
import type { Proof, ProofMode } from "../../proof/format.ts";
import type { PublicKey } from "../../proof/keys.ts";
import {
  ATTESTATION_WAIT_MS,
  type AttestationRequest,
  ErrorReply,
  NotaryInfo,
  type ProxyAttestationRequest,
  type ProxySessionRequest,
  SessionCreated,
  SessionRunning,
  type SessionRequest,
} from "../../protocol/notary.ts";
import { checkNotaryAnswer, notaryTrust } from "./trust.ts";

export interface NotaryClient extends NotarySessions {
  /**
   * Declares what was hidden and receives the signed proof once the notary has verified the session; throws
   * `notary_untrusted` unless the proof verifies against a trusted key and is of this request, in `mode`.
   */
  attest(sessionId: string, request: AttestationRequest, mode: ProofMode): Promise<Proof>;
  /** True when the notary still runs this session (a warm session whose notary side vanished is useless). */
  isRunning(sessionId: string): Promise<boolean>;
  sessionState(sessionId: string): Promise<SessionCheck>;
  info(): Promise<NotaryInfo>;
  /**
   * Resolves while the notary running this session (any notary, without one) answers; throws
   * `notary_unavailable` otherwise. A running session polls it to notice a notary that went away.
   */
  reachable(sessionId?: string): Promise<void>;
  /** Proxy mode: the notary connects to the target; bytes then flow through `relayUrl`. */
  createProxySession(request: ProxySessionRequest): Promise<string>;
  relayUrl(sessionId: string): string;
  attestProxy(sessionId: string, request: ProxyAttestationRequest): Promise<Proof>;
  releaseProxy(sessionId: string): Promise<void>;
}

/** Notary error codes a prover passes on unchanged: they are about the client's request or its target, not the notary. */
const PASSED_ON: readonly ErrorCode[] = [
  "target_forbidden",
  "target_unresolvable",
  "target_unreachable",
  "target_timeout",
  // A proxy-mode notary refusing the target's chain says what the prover's own check would.
  "tls_untrusted",
  "proxy_mode_unavailable",
  // The notary's verdict on the exchange itself: the answer is not one complete HTTP/1.1 answer to one request.
  "answer_incomplete",
  "answer_not_single",
  "answer_encoded",
  "answer_malformed",
  "alpn_refused",
  "attestation_late",
];

/**
 * A client of one notary. Its proofs must verify against `pinnedKeys`, or, when none are pinned, against the
 * key it announced at first contact (notary-trust.ts).
 */
export function createNotaryClient(baseUrl: string, apiKey?: string, pinnedKeys: readonly PublicKey[] = []): NotaryClient {
  const trust = notaryTrust(pinnedKeys);
  const base = baseUrl.replace(/\/+$/, "");
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;

  async function call(path: string, init: RequestInit & { timeoutMs: number }): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, { ...init, headers, signal: AbortSignal.timeout(init.timeoutMs) });
    } catch {
      throw new AppError("notary_unavailable", "the notary cannot be reached");
    }
    const body: unknown = await response.json().catch(() => null);
    if (response.ok) return body;
    const reply = v.safeParse(ErrorReply, body);
    const reason = reply.success ? reply.output.error.message : `HTTP ${response.status}`;
    // Refusals about the target, the mode or the exchange are the client's to read as the notary worded them.
    const code = reply.success ? reply.output.error.code : "";
    if (isErrorCode(code) && PASSED_ON.includes(code)) throw new AppError(code, reason);
    if (response.status === 503) throw new AppError("over_capacity", `the notary is busy: ${reason}`);
    if (response.status === 401 || response.status === 403) {
      throw new AppError("notary_unavailable", `the notary refused this prover: ${reason}`);
    }
    throw new AppError(response.status >= 500 ? "notary_unavailable" : "session_failed", `the notary answered: ${reason}`);
  }

  async function info(): Promise<NotaryInfo> {
    const parsed = v.safeParse(NotaryInfo, await call("/info", { method: "GET", timeoutMs: 10_000 }));
    if (!parsed.success) throw new AppError("notary_unavailable", "the notary's /info answer is malformed");
    trust.checkAnnounced(parsed.output.publicKey);
    return parsed.output;
  }

  /** A 4xx answer is the notary's word that the session does not run; no answer or a 5xx says nothing. */
  async function sessionState(sessionId: string): Promise<SessionCheck> {
    try {
      const answer = v.safeParse(SessionRunning, await call(`/session/${encodeURIComponent(sessionId)}`, { method: "GET", timeoutMs: 3_000 }));
      return answer.success ? { state: "running", traffic: answer.output.traffic } : { state: "running" };
    } catch (error) {
      return { state: error instanceof AppError && error.code === "session_failed" ? "not_running" : "unknown" };
    }
  }

  /** An untrusted notary gets no session: its proof would be refused once the whole session is over. */
  async function refuseUntrusted(): Promise<void> {
    if (!trust.contacted()) await info();
    const refusal = trust.refusal();
    if (refusal) throw refusal;
  }

  /** A signed answer is taken only once it verifies against a trusted key and is of this request, in `mode`. */
  async function checkedProof(answer: unknown, requestId: string, mode: ProofMode): Promise<Proof> {
    // First contact may not have happened yet (the pool's first health check still running).
    if (trust.keys().length === 0) await info();
    return checkNotaryAnswer(answer, trust.keys(), { requestId, mode });
  }

  return {
    async createSession(sizes) {
      await refuseUntrusted();
      const request: SessionRequest = { clientType: "Websocket", ...sizes };
      const body = await call("/session", {
        method: "POST",
        body: JSON.stringify(request),
        timeoutMs: 10_000,
      });
      const parsed = v.safeParse(SessionCreated, body);
      if (!parsed.success) throw new AppError("notary_unavailable", "the notary's session answer is malformed");
      return parsed.output.sessionId;
    },
    notarizeUrl(sessionId) {
      return `${base.replace(/^http/, "ws")}/notarize?sessionId=${encodeURIComponent(sessionId)}`;
    },
    async attest(sessionId, request, mode) {
      const answer = await call(`/session/${encodeURIComponent(sessionId)}/attestation`, {
        method: "POST",
        body: JSON.stringify(request),
        timeoutMs: ATTESTATION_WAIT_MS,
      });
      return checkedProof(answer, request.requestId, mode);
    },
    async isRunning(sessionId) {
      return (await sessionState(sessionId)).state === "running";
    },
    sessionState,
    async release(sessionId) {
      await call(`/session/${encodeURIComponent(sessionId)}`, { method: "DELETE", timeoutMs: 5_000 }).catch(() => {});
    },
    async createProxySession(request) {
      await refuseUntrusted();
      const parsed = v.safeParse(SessionCreated, await call("/proxy-session", { method: "POST", body: JSON.stringify(request), timeoutMs: 20_000 }));
      if (!parsed.success) throw new AppError("notary_unavailable", "the notary's proxy session answer is malformed");
      return parsed.output.sessionId;
    },
    relayUrl(sessionId) {
      return `${base.replace(/^http/, "ws")}/relay?sessionId=${encodeURIComponent(sessionId)}`;
    },
    async attestProxy(sessionId, request) {
      const answer = await call(`/proxy-session/${encodeURIComponent(sessionId)}/attestation`, {
        method: "POST",
        body: JSON.stringify(request),
        timeoutMs: ATTESTATION_WAIT_MS,
      });
      return checkedProof(answer, request.requestId, "proxy");
    },
    async releaseProxy(sessionId) {
      await call(`/proxy-session/${encodeURIComponent(sessionId)}`, { method: "DELETE", timeoutMs: 5_000 }).catch(() => {});
    },
    info,
    async reachable() {
      await info();
    },
  };
}
