/** The notary's WebSockets: each mode's socket (MPC's /notarize, proxy mode's /relay, ...), declared once over the modes. */
import type { Server, WebSocketHandler } from "bun";
import { AppError } from "../core/errors.ts";
import { errorResponse } from "../http/error-handling.ts";
import { modeRoutes } from "../protocol/notary.ts";
import { MAX_MPC_MESSAGE_BYTES, MPC_BACKLOG_BYTES } from "./limits.ts";
import type { ModeSocket, NotaryModes, NotarySocket, NotarySocketData } from "./modes.ts";

/**
 * Upgrades a request to a mode's socket path for a session that mode accepts: a Response when it is refused,
 * undefined when it was upgraded. Returns null for any other path (it goes to the HTTP routes).
 */
export function socketUpgrade(modes: NotaryModes, request: Request, server: Server<NotarySocketData>): Response | undefined | null {
  const { pathname, searchParams } = new URL(request.url);
  const mode = modes.all().find((candidate) => candidate.socket && modeRoutes(candidate.facts.name).socket === pathname);
  if (!mode?.socket) return null;
  const sessionId = searchParams.get("sessionId") ?? "";
  if (!mode.socket.accepts(sessionId)) return errorResponse(new AppError("not_found", "unknown or used session"));
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
