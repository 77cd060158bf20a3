/**
 * Proxy-mode sessions on the notary: each one a relay to a target the notary resolved and dialled itself
 * (under its own target policy), the prover's relay WebSocket, and one attestation. Single use, bounded in
 * number and in time like MPC sessions.
 */
import type { ServerWebSocket } from "bun";
import type { ProxyLimits, SessionLimits } from "../config/notary.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { ProxySessionRequest } from "../protocol/notary.ts";
import { resolveTarget } from "../core/target-policy.ts";
import type { RelayedBytes } from "../tls/verify-session.ts";
import { type Relay, type RelayEvent, openRelay, tlsBytesFor } from "./relay.ts";
import type { NotarySocketData } from "./sessions.ts";

interface ProxySession {
  id: string;
  serverName: string;
  port: number;
  relay: Relay;
  socket?: ServerWebSocket<NotarySocketData>;
  taken: boolean;
  timer: Timer;
}

/** What an attestation gets: the name and port the notary dialled, the bytes it relayed and when. */
export interface RelayedSession {
  serverName: string;
  port: number;
  bytes: RelayedBytes;
  events: RelayEvent[];
}

export interface ProxySessionRegistry {
  /** Resolves and connects to the target; throws target_forbidden, target_unresolvable, target_unreachable, over_capacity. */
  create(request: ProxySessionRequest): Promise<string>;
  has(id: string): boolean;
  attach(socket: ServerWebSocket<NotarySocketData>): void;
  forward(socket: ServerWebSocket<NotarySocketData>, data: Uint8Array): void;
  drain(socket: ServerWebSocket<NotarySocketData>): void;
  detach(socket: ServerWebSocket<NotarySocketData>): void;
  /** Takes the session for its one attestation once its relay has ended; the session is gone afterwards. */
  takeRelayed(id: string): Promise<RelayedSession>;
  release(id: string): void;
  active(): number;
  closeAll(): void;
}

/** After the prover asks for its attestation, how long its relay socket may take to close. */
const RELAY_END_GRACE_MS = 2_000;
/** How long the notary waits for a target to accept its connection. */
const TARGET_CONNECT_MS = 10_000;

export function createProxySessions(limits: SessionLimits, proxy: ProxyLimits, log: Logger): ProxySessionRegistry {
  const sessions = new Map<string, ProxySession>();
  const relayLimits = { maxToTarget: tlsBytesFor(proxy.maxSentData), maxFromTarget: tlsBytesFor(proxy.maxRecvData) };

  function dispose(session: ProxySession, reason?: string) {
    clearTimeout(session.timer);
    sessions.delete(session.id);
    session.relay.close();
    if (reason) log.info("proxy session ended", { sessionId: session.id, reason });
  }
  const sessionOf = (socket: ServerWebSocket<NotarySocketData>) => {
    const session = sessions.get(socket.data.sessionId);
    return session?.socket === socket ? session : undefined;
  };

  return {
    async create(request) {
      if (sessions.size >= limits.concurrency) {
        throw new AppError("over_capacity", `the notary is running its maximum of ${limits.concurrency} proxy sessions`);
      }
      const target = await resolveTarget(request, proxy.policy);
      const relay = await openRelay(target.address, target.port, TARGET_CONNECT_MS, relayLimits);
      const id = crypto.randomUUID();
      const session: ProxySession = {
        id,
        serverName: request.serverName,
        port: request.port,
        relay,
        taken: false,
        // Until the prover's relay socket comes; then the session's whole life.
        timer: setTimeout(() => dispose(session, "the prover did not connect in time"), limits.connectTimeoutMs),
      };
      sessions.set(id, session);
      return id;
    },
    has: (id) => sessions.get(id)?.socket === undefined && sessions.has(id),
    attach(socket) {
      const session = sessions.get(socket.data.sessionId);
      if (!session || session.socket) return socket.close(1008, "unknown or used session");
      session.socket = socket;
      clearTimeout(session.timer);
      session.timer = setTimeout(() => dispose(session, "the session timed out"), limits.timeoutMs);
      session.relay.attach({
        // -1: queued behind earlier bytes (backpressure); 0: dropped (the socket is closing).
        send: (data) => socket.readyState === 1 && socket.sendBinary(data) > 0,
        close: () => socket.readyState === 1 && socket.close(),
      });
    },
    forward(socket, data) {
      sessionOf(socket)?.relay.toTarget(data);
    },
    drain(socket) {
      sessionOf(socket)?.relay.resume();
    },
    detach(socket) {
      sessionOf(socket)?.relay.proverClosed();
    },
    async takeRelayed(id) {
      const session = sessions.get(id);
      if (!session) throw new AppError("not_found", "unknown or finished proxy session");
      if (session.taken) throw new AppError("session_taken", "this session's attestation was already requested");
      session.taken = true;
      try {
        await Promise.race([session.relay.ended, Bun.sleep(RELAY_END_GRACE_MS)]);
        const failure = session.relay.failure();
        if (failure) throw new AppError("session_failed", failure);
        return { serverName: session.serverName, port: session.port, bytes: session.relay.recorded(), events: session.relay.events() };
      } finally {
        dispose(session);
      }
    },
    release(id) {
      const session = sessions.get(id);
      if (session) dispose(session, "released by the prover");
    },
    active: () => sessions.size,
    closeAll() {
      for (const session of [...sessions.values()]) dispose(session, "the notary shut down");
    },
  };
}
