import * as v from "valibot";
import { AppError, type ErrorCode, isErrorCode } from "../../core/errors.ts";
import type { SessionCheck } from "../../core/session-traffic.ts";
import type { Proof } from "../../proof/format.ts";
import { modeFacts } from "../../proof/modes.ts";
import type { PublicKey } from "../../proof/keys.ts";
import {
  ATTESTATION_WAIT_MS,
  type AttestationRequest,
  ErrorReply,
  NotaryInfo,
  SessionCreated,
  SessionRunning,
  type SocketEnd,
  type SocketListener,
  modeRoutes,
} from "../../protocol/notary.ts";
import { type NotaryTransport, networkTransport } from "./transport.ts";
import { checkNotaryAnswer, notaryTrust } from "./trust.ts";

/**
 * A notary as a prover speaks to it, the same calls for every mode: a mode names its sessions' routes
 * (src/protocol/notary.ts, modeRoutes) and sends its own session request and attestation fields.
 */
export interface NotaryClient {
  /** Opens a session of `mode` from its session request; its id. A notary this prover does not trust gets none. */
  createSession(mode: string, request: unknown): Promise<string>;
  /** The WebSocket URL of a session's socket (MPC's, proxy mode's relay), for an engine that opens it itself. */
  socketUrl(mode: string, sessionId: string): string;
  /** Opens a session's socket (proxy mode's relay) by this client's transport; `notary_unavailable` when it cannot. */
  openSocket(mode: string, sessionId: string, listener: SocketListener, timeoutMs: number): Promise<SocketEnd>;
  /**
   * Declares what was hidden (and what the mode adds) and receives the signed proof once the notary has verified the
   * session; throws `notary_untrusted` unless the proof verifies against a trusted key and is of this request, in `mode`.
   */
  attest(mode: string, sessionId: string, request: AttestationRequest & Record<string, unknown>): Promise<Proof>;
  /** Ends a session that will make no proof, so the notary frees its place now. Never throws. */
  release(mode: string, sessionId: string): Promise<void>;
  /** What the notary says of a session and its socket's traffic. */
  sessionState(mode: string, sessionId: string): Promise<SessionCheck>;
  info(): Promise<NotaryInfo>;
  /**
   * Resolves while the notary running this session (any notary, without one) answers; throws
   * `notary_unavailable` otherwise. A running session polls it to notice a notary that went away.
   */
  reachable(sessionId?: string): Promise<void>;
  /** Waits for `work` on this session, or rejects once its notary is found gone (several notaries only). */
  whileReachable?<T>(sessionId: string, work: Promise<T>): Promise<T>;
}

/**
 * How long a session request may take: a notary that dials the target (proxy mode) answers once connected, within
 * its own connect timeout; others answer at once.
 */
const sessionWaitMs = (mode: string): number => (modeFacts(mode)?.notaryDials ? 20_000 : 10_000);

/** Notary error codes a prover passes on unchanged: they are about the client's request or its target, not the notary. */
const PASSED_ON: readonly ErrorCode[] = [
  "target_forbidden",
  "target_unresolvable",
  "target_unreachable",
  "target_timeout",
  // A proxy-mode notary refusing the target's chain says what the prover's own check would.
  "tls_untrusted",
  "proxy_mode_unavailable",
  "mode_unavailable",
  // The notary's verdict on the exchange itself: the answer is not one complete HTTP/1.1 answer to one request.
  "answer_incomplete",
  "answer_not_single",
  "answer_encoded",
  "answer_malformed",
  "alpn_refused",
  "attestation_late",
  // Its verdict on the request: the proof would show bytes not proven to be what the server read.
  "request_unproven",
  // It signed a statement for this request id before: it signs one per id, ever.
  "already_attested",
  // Its verdict on the claims asked: one the answer cannot support as asked, or one it cannot read.
  "claim_unsupported",
  "invalid_claim",
];

/** A call to the notary's API: its JSON answer, or its refusal as the AppError a prover reads (PASSED_ON, else its own). */
type NotaryCall = (path: string, init: RequestInit & { timeoutMs: number }) => Promise<unknown>;

function notaryCaller(base: string, apiKey: string | undefined, transport: NotaryTransport): NotaryCall {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return async (path, init) => {
    let response: Response;
    try {
      response = await transport.call(`${base}${path}`, { ...init, headers, signal: AbortSignal.timeout(init.timeoutMs) });
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
  };
}

/**
 * A client of one notary. Its proofs must verify against `pinnedKeys`, or, when none are pinned, against the
 * key it announced at first contact (trust.ts). Its HTTP calls go by `transport` (the network unless told).
 */
export function createNotaryClient(baseUrl: string, apiKey?: string, pinnedKeys: readonly PublicKey[] = [], transport: NotaryTransport = networkTransport): NotaryClient {
  const sessionPath = (mode: string, sessionId: string) => `${modeRoutes(mode).session}/${encodeURIComponent(sessionId)}`;
  const trust = notaryTrust(pinnedKeys);
  const base = baseUrl.replace(/\/+$/, "");
  const call = notaryCaller(base, apiKey, transport);
  const socketUrl = (mode: string, sessionId: string) => `${base.replace(/^http/, "ws")}${modeRoutes(mode).socket}?sessionId=${encodeURIComponent(sessionId)}`;

  async function info(): Promise<NotaryInfo> {
    const parsed = v.safeParse(NotaryInfo, await call("/info", { method: "GET", timeoutMs: 10_000 }));
    if (!parsed.success) throw new AppError("notary_unavailable", "the notary's /info answer is malformed");
    trust.checkAnnounced(parsed.output.publicKey);
    return parsed.output;
  }

  /** A 4xx answer is the notary's word that the session does not run; no answer or a 5xx says nothing. */
  async function sessionState(mode: string, sessionId: string): Promise<SessionCheck> {
    try {
      const answer = v.safeParse(SessionRunning, await call(sessionPath(mode, sessionId), { method: "GET", timeoutMs: 3_000 }));
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
  async function checkedProof(answer: unknown, requestId: string, mode: string): Promise<Proof> {
    // First contact may not have happened yet (the pool's first health check still running).
    if (trust.keys().length === 0) await info();
    return checkNotaryAnswer(answer, trust.keys(), { requestId, mode });
  }

  return {
    async createSession(mode, request) {
      await refuseUntrusted();
      const body = await call(modeRoutes(mode).session, { method: "POST", body: JSON.stringify(request), timeoutMs: sessionWaitMs(mode) });
      const parsed = v.safeParse(SessionCreated, body);
      if (!parsed.success) throw new AppError("notary_unavailable", "the notary's session answer is malformed");
      return parsed.output.sessionId;
    },
    socketUrl,
    openSocket: (mode, sessionId, listener, timeoutMs) => transport.openSocket(socketUrl(mode, sessionId), listener, timeoutMs),
    async attest(mode, sessionId, request) {
      const answer = await call(`${sessionPath(mode, sessionId)}/attestation`, { method: "POST", body: JSON.stringify(request), timeoutMs: ATTESTATION_WAIT_MS });
      return checkedProof(answer, request.requestId, mode);
    },
    sessionState,
    async release(mode, sessionId) {
      await call(sessionPath(mode, sessionId), { method: "DELETE", timeoutMs: 5_000 }).catch(() => {});
    },
    info,
    async reachable() {
      await info();
    },
  };
}
