import { untilAborted } from "../base/abort.ts";
import { AppError, errorText } from "../core/errors.ts";
import type { SessionSizes } from "../core/session-sizes.ts";
import type { BackgroundWork } from "./background.ts";
import type { TcpHandle } from "./bridge.ts";
import type { ExchangeRequest } from "../core/exchange.ts";
import type { EngineExchange, EngineProver, EngineProvers, RevealedRanges } from "./prover.ts";
import type { SessionCheck } from "../core/session-traffic.ts";
import { watchSetup } from "./setup-watch.ts";
import { AnswerTooLarge, ExchangeGivenUp, QUIET_AFTER_TARGET_CLOSED_MS, watchExchange } from "./exchange-watch.ts";
import { socketStatsText } from "./socket-stats.ts";

export type { EngineExchange } from "./prover.ts";

/** What the engine needs from a notary: a session, and the WebSocket its prover dials for MPC. */
export interface NotarySessions {
  /** Opens a session of these sizes; returns its id. */
  createSession(sizes: SessionSizes): Promise<string>;
  /** The WebSocket URL the engine's prover dials for this session. */
  notarizeUrl(sessionId: string): string;
  /** Ends a session that will make no proof, so the notary frees its slot now. Never throws. */
  release(sessionId: string): Promise<void>;
  /**
   * Waits for `work` on this session, or rejects once its notary is found gone (the engine may not notice a
   * notary that died during setup). Without it, the work alone is awaited.
   */
  whileReachable?<T>(sessionId: string, work: Promise<T>): Promise<T>;
  /** What the notary says of this session and its socket's traffic. Without it, a stalled setup waits for its deadline. */
  sessionState?(sessionId: string): Promise<SessionCheck>;
}

/** How often a setup asks its notary about its session, unless told (SetupOptions.checkMs). */
const SESSION_CHECK_MS = 2_000;

/** A prover whose MPC setup with the notary is done: it can make one request. */
export interface ProverSession {
  notarySessionId: string;
  serverName: string;
  sizes: SessionSizes;
  engine: EngineProver;
  /** True once the session may no longer be used (used, failed or closed). */
  closed: boolean;
  /** Called once when the session closes (the warm pool counts sessions in use with it). */
  onClose?: () => void;
  /** What the notary says of the session's socket, when it says (its exchange is watched: exchange-watch.ts). */
  traffic?: () => Promise<SessionCheck>;
}

export interface SetupOptions {
  /** A deadline: the setup is given up with its reason. */
  signal?: AbortSignal;
  /** Marks a refill's setup, which may be paused while live work runs. */
  background?: BackgroundWork;
  /**
   * A setup whose MPC socket carried nothing either way for this long of its engine's running time is given up
   * as SetupFailed (setup-watch.ts). Without it, only a session the notary ended is.
   */
  stallMs?: number;
  /** How often the setup asks its notary about its session (2 s unless told: tests ask faster). */
  checkMs?: number;
}

/**
 * Opens a notary session and runs MPC preprocessing: the slow part, independent of the request. When the
 * deadline passes first, the setup is given up with the signal's reason: the engine's call is abandoned and
 * the notary's session released.
 */
export async function setupProverSession(
  notary: NotarySessions,
  provers: EngineProvers,
  serverName: string,
  sizes: SessionSizes,
  { signal, background, stallMs = Infinity, checkMs = SESSION_CHECK_MS }: SetupOptions = {},
): Promise<ProverSession> {
  const engine = provers.create(serverName, sizes, background);
  const created = notary.createSession(sizes);
  let notarySessionId: string;
  try {
    notarySessionId = await untilAborted(created, signal);
  } catch (error) {
    engine.free();
    // A session the notary opens after the deadline is released as soon as it exists.
    if (signal?.aborted) void created.then((id) => notary.release(id), () => {});
    throw error;
  }
  const setupCall = engine.setup(notary.notarizeUrl(notarySessionId));
  const sessionState = notary.sessionState?.bind(notary);
  const setup = sessionState
    ? watchSetup(setupCall, {
        check: () => sessionState(notarySessionId),
        runningMs: () => engine.runningMs?.() ?? performance.now(),
        checkMs,
        quietLimitMs: stallMs,
        describeStall: engine.notarySocketStats && (async () => socketStatsText(await engine.notarySocketStats!())),
      })
    : setupCall;
  try {
    await untilAborted(notary.whileReachable ? notary.whileReachable(notarySessionId, setup) : setup, signal);
  } catch (error) {
    // A setup given up (its notary gone, or its deadline passed) may never end inside the engine.
    engine.abandon();
    // A stalled session still runs at the notary: its slot comes back now (a notary found gone answers nothing).
    void notary.release(notarySessionId);
    if (signal?.aborted) throw signal.reason;
    throw new SetupFailed(error);
  }
  return { notarySessionId, serverName, sizes, engine, closed: false, ...(sessionState && { traffic: () => sessionState(notarySessionId) }) };
}

/**
 * The engine's MPC setup failed with its notary: its socket dropped (`uid_mux::yamux: not connected`, `unexpected
 * end of file`), it stalled (setup-watch.ts), or the notary was found gone (`whileReachable`). Nothing has reached a
 * target yet, so the pool may set up once more when a notary answers: another of several, or this one back.
 */
export class SetupFailed extends AppError {
  constructor(cause: unknown) {
    super("notary_unavailable", `MPC setup with the notary failed: ${errorText(cause)}`, undefined, cause);
  }
}

/**
 * The engine's TLS client (rustls) reports a refused server certificate as `invalid peer certificate: <reason>`,
 * e.g. `UnknownIssuer` (the chain does not end in a trusted root) or `CertNotValidForName`.
 */
const UNTRUSTED_CERTIFICATE = /invalid peer certificate: (\w+)/i;

/** Why a certificate was refused, in words, from the engine's reason. */
function untrustedReason(reason: string, serverName: string): string {
  if (/NotValidForName/i.test(reason)) return `it is not valid for ${serverName}`;
  if (/UnknownIssuer|BadSignature/i.test(reason)) return "its chain does not end in a trusted root";
  if (/Expired|NotValidYet/i.test(reason)) return "it is outside its validity period";
  return `the engine refused it (${reason})`;
}

/** A target certificate refused, in the words every check of it uses (the engine's, and the MPC pre-check's). */
export const certificateNotTrusted = (reason: string): AppError =>
  new AppError("tls_untrusted", `the target's certificate was not trusted: ${reason}; no proof is made`);

/**
 * alpha.12 names the overflow: `attempted to receive more data than was configured ... current=16,
 * additional=3118, max=1056`. current + additional is what the session had to hold at least (the rest of
 * the answer may follow in further records).
 */
const OVERFLOW = /(send|receive) more data than was configured.*?current=(\d+), additional=(\d+)/;

/** The direction and size of an overflow, when the engine said (a size class to repeat with is chosen from it). */
function overflowOf(text: string): { overflow: { direction: "sent" | "recv"; atLeastBytes?: number } } {
  const match = OVERFLOW.exec(text);
  if (!match) return { overflow: { direction: /send|sent/.test(text) ? "sent" : "recv" } };
  return { overflow: { direction: match[1] === "send" ? "sent" : "recv", atLeastBytes: Number(match[2]) + Number(match[3]) } };
}

/** An exchange beyond its session's sizes; `overflow` says which direction, and how much at least, when known. */
function exchangeTooLarge(sizes: ProverSession["sizes"], overflow: ReturnType<typeof overflowOf>): AppError {
  return new AppError(
    "response_too_large",
    `the exchange exceeds this session's limits (sent ${sizes.maxSentData} bytes, received ${sizes.maxRecvData} bytes); announce its size with T-MAX-SENT-DATA and T-MAX-RECV-DATA within the prover's limits, or prove it in proxy mode (T-PROOF-MODE: proxy), which proves answers of megabytes`,
    overflow,
  );
}

/** Explains an engine failure from what the TCP bridge saw and what the engine said. */
function requestFailure(error: unknown, tcp: TcpHandle, session: ProverSession): AppError {
  const { sizes } = session;
  const text = errorText(error).toLowerCase();
  if (tcp.state.failure === "refused") return new AppError("target_unreachable", "the target refused the connection");
  if (tcp.state.failure === "timeout") return new AppError("target_timeout", "connecting to the target timed out");
  if (tcp.state.failure === "response_timeout") return new AppError("target_timeout", "the target stopped answering");
  if (tcp.state.failure === "closed") return new AppError("session_timeout", "the session ran out of time");
  if (/exceed|too large|limit|max_(sent|recv)/.test(text)) return exchangeTooLarge(sizes, overflowOf(text));
  if (!tcp.state.connected) return new AppError("target_unreachable", "the target could not be reached");
  const untrusted = UNTRUSTED_CERTIFICATE.exec(errorText(error));
  if (untrusted) return certificateNotTrusted(untrustedReason(untrusted[1]!, session.serverName));
  if (/handshake|alert|cipher|protocol version|certificate|tls|unsupported/.test(text)) {
    return new AppError(
      "tls_unsupported",
      "the TLS handshake failed: the target must offer TLS 1.2 with ECDHE P-256 and AES-128-GCM (the engine's only cipher suite); proxy mode (T-PROOF-MODE: proxy) proves TLS 1.3 and every AEAD suite",
    );
  }
  if (tcp.state.closedByTarget) {
    return new AppError(
      "target_request_failed",
      `the target closed the connection before the exchange was over, after sending ${tcp.state.bytesFromTarget} bytes (a target may allow less time than an MPC-TLS exchange takes)`,
      undefined,
      error,
    );
  }
  return new AppError("target_request_failed", "the exchange with the target failed", undefined, error);
}

/** MPC-TLS handshake and one HTTP/1.1 exchange. The session is used up afterwards. */
export async function sendRequest(session: ProverSession, tcp: TcpHandle, request: ExchangeRequest): Promise<EngineExchange> {
  const call = session.engine.sendRequest(tcp.url, request);
  const { traffic } = session;
  const watched = traffic
    ? watchExchange(call, {
        check: traffic,
        target: () => ({ bytes: tcp.state.bytesFromTarget, plaintextBytes: tcp.state.plaintextFromTarget, closed: tcp.state.closedByTarget === true }),
        plaintextLimit: session.sizes.maxRecvData,
        checkMs: SESSION_CHECK_MS,
        stallMs: tcp.responseTimeoutMs,
        quietAfterCloseMs: QUIET_AFTER_TARGET_CLOSED_MS,
      })
    : call;
  try {
    return await watched;
  } catch (error) {
    // An exchange given up may never end inside the engine.
    if (error instanceof ExchangeGivenUp) {
      abandonProverSession(session);
      throw error.appError();
    }
    if (error instanceof AnswerTooLarge) {
      abandonProverSession(session);
      throw exchangeTooLarge(session.sizes, { overflow: { direction: "recv", atLeastBytes: error.plaintextBytes } });
    }
    closeProverSession(session);
    throw requestFailure(error, tcp, session);
  }
}

/**
 * Reveals everything but the hidden ranges, with the server identity. The engine's reveal resolves once the
 * prover has handed its last messages over, not once the notary has read them: closing the session at once
 * can cut the socket under the notary's verification (`unexpected end of file`). So the session stays open
 * (closed here only on failure); its owner closes it once the notary has verified.
 */
export async function revealTranscript(session: ProverSession, revealed: RevealedRanges): Promise<void> {
  try {
    await session.engine.reveal(revealed);
  } catch (error) {
    closeProverSession(session);
    throw new AppError("session_failed", `revealing the transcript to the notary failed: ${errorText(error)}`);
  }
}

export function closeProverSession(session: ProverSession): void {
  if (session.closed) return;
  session.closed = true;
  session.onClose?.();
  session.engine.free();
}

/** Closes a session whose engine call may still be running and may never end (its run was abandoned). */
export function abandonProverSession(session: ProverSession): void {
  if (session.closed) return;
  session.closed = true;
  session.onClose?.();
  session.engine.abandon();
}
