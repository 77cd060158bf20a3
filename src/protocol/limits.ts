/**
 * What bounds a notary's sessions in each built-in mode, and the defaults both roles start from: a standalone
 * notary reads its own (src/notary/config.ts), a prover gives its embedded notary the same groups from its settings
 * (src/prover/config.ts).
 */
import type { TargetPolicy } from "../core/target-policy.ts";
import { DEFAULT_MAX_HIDDEN_REQUEST_SPAN } from "../proof/request-rule.ts";

/**
 * Seconds a created session may wait for its prover's MPC socket. A prover dials right after creating a
 * session (a warm pool's too), so this only ends sessions nobody will use, which would hold a place.
 */
export const NOTARY_CONNECT_TIMEOUT_S = 30;

/** What bounds the notary's sessions (the embedded notary gets the same group from the prover's config). */
export interface SessionLimits {
  /** Sessions at once; beyond it the notary answers 503. */
  concurrency: number;
  maxSentData: number;
  maxRecvData: number;
  /** Longest life of a session, from creation. */
  timeoutMs: number;
  /** Longest wait for the prover's MPC socket after creation. */
  connectTimeoutMs: number;
}

/**
 * Proxy mode's bounds: which targets the notary dials, how many raw bytes a relay carries each way, and how long
 * a relay may hold one of the notary's places (seconds, not an MPC session's minutes: a relay only carries one
 * exchange).
 */
export interface ProxyLimits {
  policy: TargetPolicy;
  /** Most request bytes (plaintext) a proxy session may carry. */
  maxSentData: number;
  /** Most answer bytes (plaintext, headers included) a proxy session may carry. */
  maxRecvData: number;
  /** Longest life of a proxy session, from its creation to its attestation. */
  sessionTimeoutMs: number;
  /** A session whose relay carried no byte either way (or whose relay socket has not come) this long is ended. */
  idleTimeoutMs: number;
  /** Longest wait for the target to accept the notary's connection. */
  connectTimeoutMs: number;
  /** Connections to targets in progress at once: a target that never accepts holds no more places than this. */
  maxPendingConnects: number;
  /** How long after its relay ended a proxy session's attestation may be asked for. */
  attestationWindowMs: number;
  /** Most bytes of one hidden span in a revealed request (src/proof/request-rule.ts): hidden bytes may hold anything. */
  maxHiddenSpanBytes: number;
}

/** Proxy mode's default answer limit: far above MPC's, since the notary only relays and decrypts. */
export const PROXY_MAX_RECV_DATA = 4 * 1024 * 1024;
export const PROXY_MAX_SENT_DATA = 1024 * 1024;
/** A standalone notary's proxy session timeouts (seconds), YAML `proxy.session_timeout`, `idle_timeout`, `connect_timeout`. */
export const PROXY_SESSION_TIMEOUT_S = 60;
export const PROXY_IDLE_TIMEOUT_S = 10;
export const PROXY_CONNECT_TIMEOUT_S = 5;
/** Seconds after a relay's end within which its attestation must be asked for (`proxy.attestation_window`). */
export const PROXY_ATTESTATION_WINDOW_S = 10;
/** Most bytes one hidden span of a revealed request may hold (`proxy.max_hidden_span`, PROVER_PROXY_MAX_HIDDEN_SPAN). */
export const PROXY_MAX_HIDDEN_SPAN = DEFAULT_MAX_HIDDEN_REQUEST_SPAN;
/** The largest `proxy.max_hidden_span` accepted: a hidden span that long could hide a request of its own. */
export const PROXY_MAX_HIDDEN_SPAN_LIMIT = 64 * 1024;
