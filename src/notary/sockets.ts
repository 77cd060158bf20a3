/**
 * The notary's sockets: each mode's WebSocket (MPC's /notarize, proxy mode's /relay, ...), declared once over the
 * modes, and the same sockets opened in this process for the prover that embeds the notary.
 */
import type { Server, WebSocketHandler } from "bun";
import type { Logger } from "../base/log.ts";
import { AppError, errorText } from "../core/errors.ts";
import { errorResponse } from "../http/error-handling.ts";
import { type SocketEnd, type SocketListener, modeRoutes } from "../protocol/notary.ts";
import { MAX_MPC_MESSAGE_BYTES, MPC_BACKLOG_BYTES } from "./limits.ts";
import type { ModeSocket, NotaryMode, NotaryModes, NotarySocket, NotarySocketData } from "./modes.ts";

/** The mode whose socket `url` names, and the session it asks for; null when no mode's socket is at its path. */
function socketRequest(modes: NotaryModes, url: string): { mode: NotaryMode; socket: ModeSocket; sessionId: string } | null {
  const { pathname, searchParams } = new URL(url);
  const mode = modes.all().find((candidate) => candidate.socket && modeRoutes(candidate.facts.name).socket === pathname);
  return mode?.socket ? { mode, socket: mode.socket, sessionId: searchParams.get("sessionId") ?? "" } : null;
}

const unknownSession = () => new AppError("not_found", "unknown or used session");

/**
 * Upgrades a request to a mode's socket path for a session that mode accepts: a Response when it is refused,
 * undefined when it was upgraded. Returns null for any other path (it goes to the HTTP routes).
 */
export function socketUpgrade(modes: NotaryModes, request: Request, server: Server<NotarySocketData>): Response | undefined | null {
  const asked = socketRequest(modes, request.url);
  if (!asked) return null;
  const { mode, socket, sessionId } = asked;
  if (!socket.accepts(sessionId)) return errorResponse(unknownSession());
  // Bun runs the socket's `open` inside `upgrade`: nothing comes between a mode accepting a session and its socket opening.
  if (server.upgrade(request, { data: { sessionId, mode: mode.facts.name } })) return undefined;
  return errorResponse(new AppError("invalid_header", "a WebSocket upgrade is required"));
}

/** Hands each socket's events to its mode. */
export function socketHandlers(modes: NotaryModes): WebSocketHandler<NotarySocketData> {
  // Only sockets a mode accepted were upgraded: the mode is there.
  const socketOf = (ws: NotarySocket): ModeSocket => modes.get(ws.data.mode)!.socket!;
  return {
    maxPayloadLength: MAX_MPC_MESSAGE_BYTES,
    backpressureLimit: MPC_BACKLOG_BYTES,
    closeOnBackpressureLimit: true,
    // A warm session's socket is quiet until its request comes; each mode bounds its sessions' time itself.
    idleTimeout: 0,
    open: (ws) => socketOf(ws).open(ws),
    message: (ws, message) => socketOf(ws).message(ws, typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message)),
    drain: (ws) => socketOf(ws).drain?.(ws),
    close: (ws, code) => socketOf(ws).close(ws, code),
  };
}

/** The WebSocket code of a close without a code of its own (a normal close). */
const NORMAL_CLOSE = 1000;
/** The WebSocket code of a close for an error inside the server. */
const INTERNAL_ERROR_CLOSE = 1011;

/**
 * A mode's socket opened in this process: what a WebSocket to `url` would be for the prover that embeds this notary,
 * without the upgrade, the framing or the loopback hops. The mode sees the same events: `open` at once (throws
 * `not_found` where the upgrade would answer 404), then each side's bytes in order and one close, each a microtask
 * later, as a socket's events come after the call that caused them; once the mode closed the socket it hears no more
 * bytes, as Bun hands a closed socket none. Nothing is held back: both sides hold what they were sent until they read
 * it, within the mode's own byte limits. A handler that throws is logged, as Bun logs one, and its socket closed
 * (1011): the error never reaches the process.
 */
export function inProcessSocket(modes: NotaryModes, url: string, listener: SocketListener, log: Logger): SocketEnd {
  const asked = socketRequest(modes, url);
  if (!asked) throw new AppError("not_found", `no mode has a socket at ${new URL(url).pathname}`);
  const { mode, socket: handlers, sessionId } = asked;
  if (!handlers.accepts(sessionId)) throw unknownSession();
  let open = true;
  let closedByMode = false;
  const close = (code: number, reason: string) => {
    if (!open) return;
    open = false;
    // Apart: both ends hear the close even if one's handler throws.
    later(() => handlers.close(socket, code));
    later(() => listener.closed(code, reason));
  };
  // The notary's side closing: what the prover sent and the mode has not heard yet is dropped.
  const closeByMode = (code: number, reason: string) => {
    closedByMode ||= open;
    close(code, reason);
  };
  const later = (event: () => void) =>
    queueMicrotask(() => {
      try {
        event();
      } catch (error) {
        log.error("a socket's event handler failed: the socket is closed", { mode: mode.facts.name, sessionId, error: errorText(error) });
        closeByMode(INTERNAL_ERROR_CLOSE, "internal error");
      }
    });
  const socket: NotarySocket = {
    data: { sessionId, mode: mode.facts.name },
    get readyState() {
      return open ? 1 : 3;
    },
    sendBinary(data) {
      if (!open) return 0;
      // A copy, as a socket's reader gets: the sender may reuse its buffer.
      const bytes = data.slice();
      later(() => listener.bytes(bytes));
      return bytes.length;
    },
    close: (code = NORMAL_CLOSE, reason = "") => closeByMode(code, reason),
  };
  handlers.open(socket);
  return {
    send(bytes) {
      if (!open) return false;
      const copy = bytes.slice();
      later(() => closedByMode || handlers.message(socket, copy));
      return true;
    },
    close: () => close(NORMAL_CLOSE, ""),
  };
}
