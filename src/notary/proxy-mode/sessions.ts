/**
 * Proxy-mode sessions on the notary: each one a relay to a target the notary resolved and dialled itself
 * (under its own target policy), the prover's relay WebSocket, and one attestation. Single use, bounded in
 * number (a place is taken before anything is awaited) and in time: seconds, since a relay carries one exchange.
 * A relay passes nothing to its target before the prover's first bytes make a ClientHello for the session's server.
 */
import { isIP } from "node:net";
import type { ProxyLimits, SessionLimits } from "../../protocol/limits.ts";
import { AppError } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import { type ProxySessionRequest, RELAY_ENDED_CLOSE_CODE, relayEndedReason } from "../../protocol/proxy-mode.ts";
import { resolveTarget } from "../../core/target-policy.ts";
import { type OpeningGate, openingGate } from "../../tls/first-flight.ts";
import type { RelayedBytes } from "../../tls/verify-session.ts";
import { type IdleWatch, idleWatch } from "./idle-watch.ts";
import { type ProxyPlaces, type ProxyRefusal, proxyPlaces } from "./places.ts";
import { type Relay, type RelayEvent, openRelay, tlsBytesFor } from "./relay.ts";
import type { NotarySocket } from "../modes.ts";

interface ProxySession {
  id: string;
  serverName: string;
  port: number;
  relay: Relay;
  socket?: NotarySocket;
  taken: boolean;
  /** The session's whole life, from creation. */
  timer: Timer;
  /** Ends the session once no byte passed either way for the idle timeout (its socket's coming counts none). */
  idle: IdleWatch;
  /** Holds the prover's bytes back until they make a whole ClientHello for `serverName`; undefined once they did. */
  opening?: OpeningGate;
}

/** What an attestation gets: the name and port the notary dialled, the bytes it relayed and when. */
export interface RelayedSession {
  serverName: string;
  port: number;
  bytes: RelayedBytes;
  events: RelayEvent[];
}

export interface ProxySessionRegistry {
  /**
   * Resolves and connects to the target; throws target_forbidden, target_unresolvable, target_unreachable,
   * target_timeout, over_capacity (no place, or enough connections in progress).
   */
  create(request: ProxySessionRequest): Promise<string>;
  /** Whether a relay socket may open for the session: it is there and has none yet. */
  has(id: string): boolean;
  /** A relay socket opened for a session `has` accepted, in that same turn (the route's upgrade, sockets.ts). */
  attach(socket: NotarySocket): void;
  forward(socket: NotarySocket, data: Uint8Array): void;
  drain(socket: NotarySocket): void;
  detach(socket: NotarySocket): void;
  /** Takes the session for its one attestation once its relay has ended; the session is gone afterwards. */
  takeRelayed(id: string): Promise<RelayedSession>;
  release(id: string): void;
  active(): number;
  closeAll(): void;
}

/** After the prover asks for its attestation, how long its relay socket may take to close. */
const RELAY_END_GRACE_MS = 2_000;

/** Ends a relay socket; a failure goes in its close reason (RELAY_ENDED_CLOSE_CODE) for the prover to report. */
function closeRelaySocket(socket: NotarySocket | undefined, failure?: AppError) {
  if (socket?.readyState !== 1) return;
  if (failure) socket.close(RELAY_ENDED_CLOSE_CODE, relayEndedReason(failure));
  else socket.close();
}

type SessionEnd = (session: ProxySession, reason: ProxyRefusal, error: AppError) => void;

/** A session for its relay, its clocks started: its whole life, and the idle time from now. */
function startSession({ serverName, port }: ProxySessionRequest, relay: Relay, proxy: ProxyLimits, end: SessionEnd): ProxySession {
  const seconds = (ms: number) => `${ms / 1000} s`;
  const session: ProxySession = {
    id: crypto.randomUUID(),
    serverName,
    port,
    relay,
    taken: false,
    timer: setTimeout(
      () => end(session, "lifetime", new AppError("session_timeout", `the proxy session outlived its ${seconds(proxy.sessionTimeoutMs)}`)),
      proxy.sessionTimeoutMs,
    ),
    idle: idleWatch(proxy.idleTimeoutMs, () =>
      end(session, "idle", new AppError("session_timeout", `no byte passed the relay either way for ${seconds(proxy.idleTimeoutMs)}`)),
    ),
    opening: openingGate(serverName),
  };
  return session;
}

/** Passes the prover's bytes on to the target, once its opening bytes were a ClientHello for the session's server. */
function fromProver(session: ProxySession, data: Uint8Array, end: SessionEnd) {
  if (!session.opening) return session.relay.toTarget(data);
  const step = session.opening.push(data);
  if (step.kind === "refused") {
    end(session, "first_flight", new AppError("target_forbidden", `relay refused: ${step.reason}`));
  } else if (step.kind === "accepted") {
    session.opening = undefined;
    session.relay.toTarget(step.bytes);
  }
}

/**
 * The proxy sessions of one notary: created under its places and policy, relayed, attested once, ended by time,
 * idleness, a refusal or the prover.
 */
export class ProxySessions implements ProxySessionRegistry {
  private readonly sessions = new Map<string, ProxySession>();
  private readonly relayLimits: { maxToTarget: number; maxFromTarget: number };
  private readonly places: ProxyPlaces;

  constructor(
    limits: SessionLimits,
    private readonly proxy: ProxyLimits,
    private readonly log: Logger,
    private readonly countRefusal: (reason: ProxyRefusal) => void = () => {},
  ) {
    this.relayLimits = { maxToTarget: tlsBytesFor(proxy.maxSentData), maxFromTarget: tlsBytesFor(proxy.maxRecvData) };
    const placeLimits = { concurrency: limits.concurrency, maxPendingConnects: proxy.maxPendingConnects };
    this.places = proxyPlaces(placeLimits, () => this.sessions.size, (reason, error) => this.refusal(reason, error));
  }

  async create(request: ProxySessionRequest): Promise<string> {
    // The relay checks the ClientHello's server name, which a client does not send for an address (RFC 6066).
    if (isIP(request.serverName)) {
      throw new AppError("target_forbidden", "proxy mode needs a host name: a ClientHello carries no server name for an IP address");
    }
    const releasePlace = this.places.reserve();
    try {
      const target = await resolveTarget(request, this.proxy.policy);
      const relay = await this.places.connecting(() => openRelay(target.address, target.port, this.proxy.connectTimeoutMs, this.relayLimits));
      const session = startSession(request, relay, this.proxy, this.end);
      this.sessions.set(session.id, session);
      return session.id;
    } finally {
      releasePlace();
    }
  }

  has(id: string): boolean {
    return this.sessions.get(id)?.socket === undefined && this.sessions.has(id);
  }

  attach(socket: NotarySocket): void {
    const session = this.sessionOf(socket);
    session.socket = socket;
    session.relay.attach({
      send: (data) => {
        session.idle.touch();
        // -1: queued behind earlier bytes (backpressure); 0: dropped (the socket is closing).
        return socket.readyState === 1 && socket.sendBinary(data) > 0;
      },
      close: () => socket.readyState === 1 && closeRelaySocket(socket, this.relayFailure(session)),
    });
  }

  forward(socket: NotarySocket, data: Uint8Array): void {
    const session = this.sessionOf(socket);
    session.idle.touch();
    fromProver(session, data, this.end);
  }

  drain(socket: NotarySocket): void {
    this.sessionOf(socket).relay.resume();
  }

  /** Also called once the session has ended: its end closes its socket. */
  detach(socket: NotarySocket): void {
    this.sessions.get(socket.data.sessionId)?.relay.proverClosed();
  }

  async takeRelayed(id: string): Promise<RelayedSession> {
    const session = this.sessions.get(id);
    if (!session) throw new AppError("not_found", "unknown or finished proxy session");
    if (session.taken) throw new AppError("session_taken", "this session's attestation was already requested");
    session.taken = true;
    try {
      await Promise.race([session.relay.ended, Bun.sleep(RELAY_END_GRACE_MS)]);
      const failure = session.relay.failure();
      if (failure) throw new AppError("session_failed", failure);
      return { serverName: session.serverName, port: session.port, bytes: session.relay.recorded(), events: session.relay.events() };
    } finally {
      this.dispose(session);
    }
  }

  release(id: string): void {
    const session = this.sessions.get(id);
    if (session) this.dispose(session, "released by the prover");
  }

  active(): number {
    return this.sessions.size + this.places.reserved();
  }

  closeAll(): void {
    for (const session of [...this.sessions.values()]) this.dispose(session, "the notary shut down");
  }

  /** Logs and counts a refusal (its reason, never a byte relayed), and returns it to be thrown or sent. */
  private refusal(reason: ProxyRefusal, error: AppError, sessionId?: string): AppError {
    this.log.info("proxy session refused", { sessionId, reason, code: error.code, error: error.message });
    this.countRefusal(reason);
    return error;
  }

  /** Ends a session before its attestation (a refusal or a timeout), telling the prover why in the close reason. */
  private readonly end: SessionEnd = (session, reason, error) => {
    if (session.taken || !this.sessions.has(session.id)) return;
    closeRelaySocket(session.socket, this.refusal(reason, error, session.id));
    this.dispose(session);
  };

  private dispose(session: ProxySession, reason?: string): void {
    clearTimeout(session.timer);
    session.idle.stop();
    this.sessions.delete(session.id);
    session.relay.close();
    if (reason) this.log.info("proxy session ended", { sessionId: session.id, reason });
  }

  /** Why the relay failed (a byte limit), logged and told to the prover. */
  private relayFailure(session: ProxySession): AppError | undefined {
    const failure = session.relay.failure();
    if (failure === undefined) return undefined;
    this.log.info("proxy relay failed", { sessionId: session.id, error: failure });
    return new AppError("session_failed", failure);
  }

  /**
   * The session of a relay socket that is open, always there and its own: the route opens a socket only for a
   * session `has` accepted, in that same turn (sockets.ts), and a session's end closes its socket, which Bun then
   * hands no more events.
   */
  private sessionOf(socket: NotarySocket): ProxySession {
    return this.sessions.get(socket.data.sessionId)!;
  }
}
