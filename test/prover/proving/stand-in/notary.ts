/**
 * The stand-in mode's notary side (src/notary/modes.ts): a session is a target the notary resolved under its policy;
 * the request arrives over the mode's socket, the notary sends it over its own TLS connection, records both
 * directions and sends the answer back; the transcript it signs is what it sent and received.
 */
import { connect } from "node:tls";
import { AppError } from "../../../../src/core/errors.ts";
import { type TargetPolicy, resolveTarget } from "../../../../src/core/target-policy.ts";
import type { NotaryMode, NotaryModeBackend, NotarySocket } from "../../../../src/notary/modes.ts";
import type { SeenDirection, VerifiedTranscript } from "../../../../src/notary/verified-transcript.ts";
import { AttestationRequest } from "../../../../src/protocol/notary.ts";
import { STAND_IN, StandInSessionRequest } from "./facts.ts";

interface Session {
  request: StandInSessionRequest & { address: string };
  socket?: NotarySocket;
  /** The exchange, once the request came: resolves with what the notary saw. */
  exchange?: Promise<VerifiedTranscript>;
  taken: boolean;
}

const whole = (bytes: Uint8Array): SeenDirection => ({ length: bytes.length, bytes, seen: bytes.length > 0 ? [{ start: 0, end: bytes.length }] : [] });

/** The notary's own exchange with the target: the request sent, the answer read until the server closes. */
function fetchFromTarget(session: Session, sent: Uint8Array, trustAnchorsPem: readonly string[]): Promise<VerifiedTranscript> {
  const { serverName, port, address } = session.request;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let connectedAt = 0;
    const socket = connect({ host: address, port, servername: serverName, ca: [...trustAnchorsPem], ALPNProtocols: ["http/1.1"] });
    socket.once("secureConnect", () => {
      connectedAt = Date.now();
      socket.write(sent);
    });
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.once("error", (error) => reject(new AppError("target_request_failed", `the notary's exchange failed: ${error.message}`)));
    socket.once("end", () => {
      const recv = new Uint8Array(Buffer.concat(chunks));
      resolve({
        mode: STAND_IN.name,
        serverName,
        serverPort: port,
        tlsVersion: socket.getProtocol() === "TLSv1.3" ? "TLS1.3" : "TLS1.2",
        connectionTime: Math.floor(connectedAt / 1000),
        responseTime: Math.floor(Date.now() / 1000),
        sent: whole(sent),
        recv: whole(recv),
        hiddenBy: "notary",
        connectionEnd: { closed: true },
        alpn: socket.alpnProtocol || null,
      });
      socket.destroy();
    });
  });
}

function standInMode(policy: TargetPolicy, trustAnchorsPem: readonly string[]): NotaryMode<AttestationRequest, StandInSessionRequest> {
  const sessions = new Map<string, Session>();
  return {
    facts: STAND_IN,
    opens: "open a stand-in session: the notary resolves the target; its prover then sends the request over the mode's socket",
    sessionRequest: { schema: StandInSessionRequest, where: "stand-in session request", errors: ["target_forbidden", "target_unresolvable"] },
    async open(request) {
      const sessionId = crypto.randomUUID();
      sessions.set(sessionId, { request: await resolveTarget(request, policy), taken: false });
      return { sessionId, logFields: { serverName: request.serverName, port: request.port } };
    },
    release: (sessionId) => void sessions.delete(sessionId),
    attestationRequest: { schema: AttestationRequest, where: "attestation request", errors: ["target_request_failed"] },
    async verify(sessionId) {
      const session = sessions.get(sessionId);
      if (!session?.exchange) throw new AppError("not_found", "unknown or finished session");
      if (session.taken) throw new AppError("session_taken", "this session's attestation was already requested");
      session.taken = true;
      try {
        return await session.exchange;
      } finally {
        sessions.delete(sessionId);
      }
    },
    socket: {
      accepts: (sessionId) => sessions.get(sessionId)?.socket === undefined && sessions.has(sessionId),
      open(socket) {
        const session = sessions.get(socket.data.sessionId);
        if (!session || session.socket) return socket.close(1008, "unknown or used session");
        session.socket = socket;
      },
      message(socket, bytes) {
        const session = sessions.get(socket.data.sessionId);
        if (!session || session.exchange) return socket.close(1008, "one request per session");
        session.exchange = fetchFromTarget(session, bytes, trustAnchorsPem);
        session.exchange.then(
          (transcript) => {
            socket.sendBinary(transcript.recv.bytes!);
            socket.close();
          },
          () => socket.close(1011, "the exchange failed"),
        );
      },
      close: () => {},
    },
    maxBodyBytes: 1024 * 1024,
    active: () => sessions.size,
    closeAll: () => sessions.clear(),
  };
}

/** The mode's notary side, as given to a notary: it dials targets under `policy` and trusts `trustAnchorsPem`. */
export const standInNotary = (policy: TargetPolicy, trustAnchorsPem: readonly string[]): NotaryModeBackend => ({
  facts: STAND_IN,
  create: () => standInMode(policy, trustAnchorsPem),
});
