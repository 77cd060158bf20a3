import type { ServerWebSocket } from "bun";
import { Verifier, type VerifierOutput } from "tlsn-wasm";
import type { LoopbackBridge, PeerHandle } from "../engine/bridge.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";

export interface SessionLimits {
  concurrency: number;
  maxSentData: number;
  maxRecvData: number;
  timeoutMs: number;
}

export interface SessionSizes {
  maxSentData: number;
  maxRecvData: number;
}

/** The data a prover's accepted MPC socket carries. */
export interface ProverSocketData {
  sessionId: string;
}

type SessionState = "waiting" | "running" | "verified" | "failed";

interface NotarySession {
  id: string;
  sizes: SessionSizes;
  state: SessionState;
  failure?: string;
  timer: Timer;
  socket?: ServerWebSocket<ProverSocketData>;
  peer?: PeerHandle;
  verified: Promise<VerifierOutput>;
  settle: { resolve: (o: VerifierOutput) => void; reject: (e: AppError) => void };
}

export interface SessionRegistry {
  create(sizes: SessionSizes): string;
  /** A prover's MPC socket opened for this session. */
  attach(socket: ServerWebSocket<ProverSocketData>): void;
  /** Bytes from the prover's socket. */
  forward(socket: ServerWebSocket<ProverSocketData>, data: Uint8Array): void;
  detach(socket: ServerWebSocket<ProverSocketData>): void;
  /** Waits for the session's verification; the session is gone afterwards. */
  takeVerified(id: string): Promise<VerifierOutput>;
  /** Ends a session now (the prover made no proof); unknown ids are ignored. */
  release(id: string): void;
  has(id: string): boolean;
  /** True while the session's prover socket is connected and its Verifier is running. */
  isRunning(id: string): boolean;
  active(): number;
  closeAll(reason: string): void;
}

/**
 * Notary sessions: at most `concurrency` at once, each single use and bounded by `timeoutMs` from
 * creation. When a prover vanishes, its socket closes, the Verifier fails and everything is released.
 */
export function createSessionRegistry(limits: SessionLimits, bridge: LoopbackBridge, log: Logger): SessionRegistry {
  const sessions = new Map<string, NotarySession>();

  function dispose(session: NotarySession, failure?: string) {
    clearTimeout(session.timer);
    sessions.delete(session.id);
    if (failure && session.state !== "verified") {
      session.state = "failed";
      session.failure = failure;
      session.settle.reject(new AppError("session_failed", failure));
    }
    session.peer?.close();
    if (session.socket?.readyState === 1) session.socket.close();
  }

  function start(session: NotarySession, socket: ServerWebSocket<ProverSocketData>) {
    session.state = "running";
    session.socket = socket;
    session.peer = bridge.openPeer({
      onData: (data) => socket.readyState === 1 && socket.sendBinary(data),
      onClose: () => socket.readyState === 1 && socket.close(),
    });
    const verifier = new Verifier({
      max_sent_data: session.sizes.maxSentData,
      max_recv_data: session.sizes.maxRecvData,
      max_sent_records: undefined,
      max_recv_records_online: undefined,
    });
    verifier
      .connect(session.peer.url)
      .then(() => {
        session.peer?.release();
        return verifier.verify();
      })
      .then(
        (output) => {
          session.state = "verified";
          session.settle.resolve(output);
          session.peer?.close();
          log.info("session verified", { sessionId: session.id });
        },
        (error: unknown) => {
          log.warn("session failed", { sessionId: session.id, reason: String((error as Error)?.message ?? error) });
          dispose(session, "the MPC session failed or the prover went away");
        },
      )
      .finally(() => verifier.free());
  }

  return {
    create(sizes) {
      if (sizes.maxSentData > limits.maxSentData || sizes.maxRecvData > limits.maxRecvData) {
        throw new AppError(
          "session_too_large",
          `session sizes exceed this notary's limits (max_sent_data ${limits.maxSentData}, max_recv_data ${limits.maxRecvData})`,
        );
      }
      if (sessions.size >= limits.concurrency) {
        throw new AppError("over_capacity", `the notary is running its maximum of ${limits.concurrency} sessions`);
      }
      const id = crypto.randomUUID();
      let settle!: NotarySession["settle"];
      const verified = new Promise<VerifierOutput>((resolve, reject) => (settle = { resolve, reject }));
      verified.catch(() => {}); // observed by takeVerified when the prover asks
      const session: NotarySession = {
        id,
        sizes,
        state: "waiting",
        verified,
        settle,
        timer: setTimeout(() => dispose(session, "the session timed out"), limits.timeoutMs),
      };
      sessions.set(id, session);
      return id;
    },
    attach(socket) {
      const session = sessions.get(socket.data.sessionId);
      if (!session || session.state !== "waiting") return socket.close(1008, "unknown or used session");
      start(session, socket);
    },
    forward(socket, data) {
      sessions.get(socket.data.sessionId)?.peer?.send(data);
    },
    detach(socket) {
      const session = sessions.get(socket.data.sessionId);
      if (session && session.socket === socket && session.state === "running") {
        session.peer?.close();
      }
    },
    async takeVerified(id) {
      const session = sessions.get(id);
      if (!session) throw new AppError("not_found", "unknown or finished session");
      try {
        return await session.verified;
      } finally {
        dispose(session);
      }
    },
    release(id) {
      const session = sessions.get(id);
      if (session) dispose(session, "released by the prover");
    },
    has: (id) => sessions.has(id),
    isRunning: (id) => sessions.get(id)?.state === "running",
    active: () => sessions.size,
    closeAll(reason) {
      for (const session of [...sessions.values()]) dispose(session, reason);
    },
  };
}
