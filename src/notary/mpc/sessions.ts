import type { SessionLimits } from "../../protocol/limits.ts";
import type { LoopbackBridge, PeerHandle } from "../../engine/bridge.ts";
import type { EngineVerifier, EngineVerifiers, VerifierOutput } from "../../engine/verifier.ts";
import { AppError, errorText } from "../../core/errors.ts";
import type { Logger } from "../../base/log.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import type { SessionTraffic } from "../../core/session-traffic.ts";
import { mpcBudgetBytes } from "../limits.ts";
import type { NotarySocket } from "../modes.ts";
import { type TrafficCounter, countTraffic, newTrafficCounter, trafficFields, trafficNow } from "./traffic.ts";

type SessionState = "waiting" | "running" | "verified" | "failed";

/** A verified MPC session: what its Verifier output, and when the notary saw its exchange (ms since the epoch). */
export interface VerifiedMpcSession {
  output: VerifierOutput;
  /** When the socket last started carrying bytes before the exchange: its attachment, or the end of its warm wait. */
  activeSince: number;
  /** When the Verifier finished: the exchange was over and revealed by then. */
  verifiedAt: number;
}

interface NotarySession {
  id: string;
  sizes: SessionSizes;
  state: SessionState;
  failure?: string;
  /** Set once an attestation call took the session: a second one is refused. */
  taken: boolean;
  timer: Timer;
  /** Ends the session if its prover has not connected in time. */
  connectTimer: Timer;
  socket?: NotarySocket;
  peer?: PeerHandle;
  verifier?: EngineVerifier;
  /** Bytes the prover may still send (see mpcBudgetBytes). */
  budget: number;
  /** Set once the prover's socket is attached. */
  traffic?: TrafficCounter;
  verified: Promise<VerifiedMpcSession>;
  settle: { resolve: (o: VerifiedMpcSession) => void; reject: (e: AppError) => void };
}

export interface SessionRegistry {
  create(sizes: SessionSizes): string;
  /** A prover's MPC socket opened for this session. */
  attach(socket: NotarySocket): void;
  /** Bytes from the prover's socket. */
  forward(socket: NotarySocket, data: Uint8Array): void;
  /** The prover's MPC socket closed (`code` as WebSocket close codes: 1009 means a message over the limit). */
  detach(socket: NotarySocket, code?: number): void;
  /**
   * Takes the session for its one attestation (a second call is refused with `session_taken`), then waits
   * for its verification; the session is gone afterwards.
   */
  takeVerified(id: string): Promise<VerifiedMpcSession>;
  /** Ends a session now (the prover made no proof); unknown ids are ignored. */
  release(id: string): void;
  has(id: string): boolean;
  /** True while the session's prover socket is connected and its Verifier is running. */
  isRunning(id: string): boolean;
  /** What a running session's socket carried so far; undefined unless it runs. */
  traffic(id: string): SessionTraffic | undefined;
  active(): number;
  /** Sessions whose verification failed since start. */
  failures(): number;
  closeAll(reason: string): void;
}

/** How long the Verifier may still read what a prover sent before closing its socket. */
const PEER_CLOSE_GRACE_MS = 5_000;

/** Refuses a session larger than this notary's limits, or one more than it may run at once. */
function checkRoom(limits: SessionLimits, sizes: SessionSizes, active: number): void {
  if (sizes.maxSentData > limits.maxSentData || sizes.maxRecvData > limits.maxRecvData) {
    throw new AppError(
      "session_too_large",
      `session sizes exceed this notary's limits (max_sent_data ${limits.maxSentData}, max_recv_data ${limits.maxRecvData})`,
    );
  }
  if (active >= limits.concurrency) {
    throw new AppError("over_capacity", `the notary is running its maximum of ${limits.concurrency} sessions`);
  }
}

/** A waiting session, ended by `end` when it times out or its prover does not connect in time. */
function waitingSession(sizes: SessionSizes, limits: SessionLimits, end: (session: NotarySession, reason: string) => void): NotarySession {
  let settle!: NotarySession["settle"];
  const verified = new Promise<VerifiedMpcSession>((resolve, reject) => (settle = { resolve, reject }));
  verified.catch(() => {}); // observed by takeVerified when the prover asks
  const session: NotarySession = {
    id: crypto.randomUUID(),
    sizes,
    state: "waiting",
    taken: false,
    budget: mpcBudgetBytes(sizes),
    verified,
    settle,
    timer: setTimeout(() => end(session, "the session timed out"), limits.timeoutMs),
    connectTimer: setTimeout(() => end(session, "the prover did not connect in time"), limits.connectTimeoutMs),
  };
  return session;
}

/**
 * Notary sessions: at most `concurrency` at once, each single use and bounded by `timeoutMs` from
 * creation; one whose prover does not connect within `connectTimeoutMs` ends then. When a prover vanishes,
 * its socket closes, the Verifier fails and everything is released. Verifiers come from `verifiers`: this
 * process's engine for a notary of its own, the engine hosts for a prover's embedded notary.
 */
export class MpcSessions implements SessionRegistry {
  private readonly sessions = new Map<string, NotarySession>();
  private failed = 0;

  constructor(
    private readonly limits: SessionLimits,
    private readonly bridge: LoopbackBridge,
    private readonly verifiers: EngineVerifiers,
    private readonly log: Logger,
  ) {}

  // Creating and ending sessions.

  create(sizes: SessionSizes): string {
    checkRoom(this.limits, sizes, this.sessions.size);
    const session = waitingSession(sizes, this.limits, (ended, reason) => this.dispose(ended, reason));
    this.sessions.set(session.id, session);
    return session.id;
  }

  release(id: string): void {
    const session = this.sessions.get(id);
    if (session) this.dispose(session, "released by the prover");
  }

  closeAll(reason: string): void {
    for (const session of [...this.sessions.values()]) this.dispose(session, reason);
  }

  private dispose(session: NotarySession, failure?: string): void {
    // Ended once: a released session's Verifier fails afterwards, and must not end it (or count it) a second time.
    if (this.sessions.get(session.id) !== session) return;
    clearTimeout(session.timer);
    clearTimeout(session.connectTimer);
    this.sessions.delete(session.id);
    if (failure) {
      const traffic = session.traffic ? trafficFields(session.traffic) : {};
      this.log.info("session ended", { sessionId: session.id, state: session.state, reason: failure, ...traffic });
    }
    if (failure && session.state !== "verified") {
      this.failed += 1;
      session.state = "failed";
      session.failure = failure;
      session.settle.reject(new AppError("session_failed", failure));
    }
    session.peer?.close();
    if (session.socket?.readyState === 1) session.socket.close();
    // Its peer is gone, so a running Verifier fails soon; one that never does is given up (its host is replaced).
    session.verifier?.abandon();
  }

  // The prover's MPC socket.

  attach(socket: NotarySocket): void {
    const session = this.sessions.get(socket.data.sessionId);
    if (!session || session.state !== "waiting") return socket.close(1008, "unknown or used session");
    this.start(session, socket);
  }

  forward(socket: NotarySocket, data: Uint8Array): void {
    const session = this.sessions.get(socket.data.sessionId);
    if (!session) return;
    session.budget -= data.length;
    if (session.budget < 0) return this.dispose(session, "the prover sent more than a session of its sizes needs");
    if (session.traffic) countTraffic(session.traffic, "fromProver", data.length);
    session.peer?.send(data);
  }

  detach(socket: NotarySocket, code?: number): void {
    const session = this.sessions.get(socket.data.sessionId);
    if (session && session.socket === socket && session.state === "running") {
      this.log.info("MPC socket closed while the session ran", { sessionId: session.id, code });
      // A prover may close as soon as it has sent its last message: the Verifier still has it to read.
      // It ends on its own then, or finds the stream ended once the bytes are delivered.
      setTimeout(() => session.peer?.close(), PEER_CLOSE_GRACE_MS);
    }
  }

  // The Verifier.

  /** Runs the session's Verifier against the prover's socket, through a loopback peer of the bridge. */
  private start(session: NotarySession, socket: NotarySocket): void {
    clearTimeout(session.connectTimer);
    session.socket = socket;
    let verifier: EngineVerifier;
    try {
      verifier = this.verifiers.create(session.sizes, session.id);
    } catch (error) {
      return this.dispose(session, `no engine room for this session's Verifier: ${errorText(error)}`);
    }
    session.state = "running";
    session.verifier = verifier;
    const traffic = newTrafficCounter();
    session.traffic = traffic;
    session.peer = this.bridge.openPeer({
      onData: (data) => {
        countTraffic(traffic, "toProver", data.length);
        if (socket.readyState === 1) socket.sendBinary(data);
      },
      onClose: () => socket.readyState === 1 && socket.close(),
    });
    verifier
      .verify(session.peer.url, () => session.peer?.release())
      .then(
        (output) => this.verified(session, output),
        (error: unknown) => {
          // A session already ended (released, timed out) fails its Verifier as its peer closes: that says nothing new.
          if (this.sessions.get(session.id) !== session) return;
          this.log.warn("session failed", { sessionId: session.id, reason: errorText(error) });
          this.dispose(session, "the MPC session failed or the prover went away");
        },
      )
      .finally(() => verifier.free());
  }

  private verified(session: NotarySession, output: VerifierOutput): void {
    session.state = "verified";
    session.settle.resolve({ output, activeSince: session.traffic?.activeSince ?? Date.now(), verifiedAt: Date.now() });
    session.peer?.close();
    this.log.info("session verified", { sessionId: session.id, ...(session.traffic ? trafficFields(session.traffic) : {}) });
  }

  // The attestation.

  async takeVerified(id: string): Promise<VerifiedMpcSession> {
    const session = this.sessions.get(id);
    if (!session) {
      this.log.warn("attestation asked for an unknown or finished session", { sessionId: id });
      throw new AppError("not_found", "unknown or finished session");
    }
    // Taken before any await: two calls arriving together must not both get a signature.
    if (session.taken) throw new AppError("session_taken", "this session's attestation was already requested");
    session.taken = true;
    try {
      return await session.verified;
    } finally {
      this.dispose(session);
    }
  }

  // What the routes and metrics read.

  has(id: string): boolean {
    return this.sessions.has(id);
  }

  isRunning(id: string): boolean {
    return this.sessions.get(id)?.state === "running";
  }

  traffic(id: string): SessionTraffic | undefined {
    const session = this.sessions.get(id);
    return session?.state === "running" && session.traffic ? trafficNow(session.traffic) : undefined;
  }

  active(): number {
    return this.sessions.size;
  }

  failures(): number {
    return this.failed;
  }
}
