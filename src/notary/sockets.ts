/** The notary's WebSockets: a prover's MPC socket (/notarize) and a proxy session's relay (/relay). */
import type { Server, WebSocketHandler } from "bun";
import { AppError } from "../errors.ts";
import { errorResponse } from "../http.ts";
import { MAX_MPC_MESSAGE_BYTES, MPC_BACKLOG_BYTES } from "./limits.ts";
import type { ProxySessionRegistry } from "./proxy-mode/sessions.ts";
import type { NotarySocketData, SessionRegistry } from "./mpc/sessions.ts";

export interface NotarySockets {
  sessions: SessionRegistry;
  /** Set when the notary offers proxy mode. */
  proxySessions?: ProxySessionRegistry;
}

/**
 * Upgrades a request to /notarize or /relay for a known session: a Response when it is refused, undefined when
 * it was upgraded. Returns null for any other path (it goes to the HTTP routes).
 */
export function socketUpgrade(
  { sessions, proxySessions }: NotarySockets,
  request: Request,
  server: Server<NotarySocketData>,
): Response | undefined | null {
  const { pathname, searchParams } = new URL(request.url);
  const sessionId = searchParams.get("sessionId") ?? "";
  let kind: NotarySocketData["kind"];
  if (pathname === "/notarize") {
    if (!sessions.has(sessionId)) return errorResponse(new AppError("not_found", "unknown or used session"));
    kind = "mpc";
  } else if (pathname === "/relay") {
    if (!proxySessions?.has(sessionId)) return errorResponse(new AppError("not_found", "unknown or used proxy session"));
    kind = "relay";
  } else return null;
  if (server.upgrade(request, { data: { sessionId, kind } })) return undefined;
  return errorResponse(new AppError("invalid_header", "a WebSocket upgrade is required"));
}

/** Hands each socket's events to its session's registry. */
export function socketHandlers({ sessions, proxySessions }: NotarySockets): WebSocketHandler<NotarySocketData> {
  return {
    maxPayloadLength: MAX_MPC_MESSAGE_BYTES,
    backpressureLimit: MPC_BACKLOG_BYTES,
    closeOnBackpressureLimit: true,
    // A warm session's socket is quiet until its request comes; the session timeout bounds it.
    idleTimeout: 0,
    open: (ws) => (ws.data.kind === "relay" ? proxySessions?.attach(ws) : sessions.attach(ws)),
    message: (ws, message) => {
      const bytes = typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message);
      if (ws.data.kind === "relay") proxySessions?.forward(ws, bytes);
      else sessions.forward(ws, bytes);
    },
    drain: (ws) => {
      if (ws.data.kind === "relay") proxySessions?.drain(ws);
    },
    close: (ws, code) => (ws.data.kind === "relay" ? proxySessions?.detach(ws) : sessions.detach(ws, code)),
  };
}
