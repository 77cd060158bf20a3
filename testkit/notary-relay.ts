import type { ServerWebSocket } from "bun";

export type RelayDirection = "toNotary" | "toProver";

export interface RelayTaps {
  /**
   * Asked as each MPC socket opens: how many messages (both ways together) it passes before it goes silent.
   * Infinity (the default) passes them all; 0 black-holes it from the start. A silent socket stays open and
   * the notary dialled, but nothing passes either way and the notary closing its side is not passed on: a
   * notary that is up and answers HTTP, while the session makes no progress.
   */
  passes?(): number;
  /** Sees every message passed on a socket (an MPC socket, a proxy relay), by its size and bytes. */
  message?(direction: RelayDirection, size: number, bytes: Uint8Array): void;
  /** Sees every HTTP request passed to the notary: its path and body (empty for GET). */
  request?(path: string, body: Uint8Array): void;
}

export interface NotaryRelay {
  /** Use in place of the notary's URL. */
  url: string;
  stop(): void;
}

interface Link {
  upstreamUrl: string;
  /** Messages it still passes. */
  passes: number;
  upstream?: WebSocket;
  /** Messages that came before the upstream opened; its open event sends them, in order, and ends the queue. */
  queue: Uint8Array[] | undefined;
}

const UNLIMITED = 1024 ** 3;

/** A relay in front of a notary: HTTP requests are passed on as they are, WebSockets message by message. */
export function startNotaryRelay(notaryUrl: string, taps: RelayTaps = {}): NotaryRelay {
  const base = notaryUrl.replace(/\/+$/, "");
  const server = Bun.serve<Link>({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request, server) {
      const { pathname, search } = new URL(request.url);
      if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
        const link: Link = { upstreamUrl: `${base.replace(/^http/, "ws")}${pathname}${search}`, passes: taps.passes?.() ?? Infinity, queue: [] };
        return server.upgrade(request, { data: link }) ? undefined : new Response("upgrade failed", { status: 400 });
      }
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
      taps.request?.(pathname, new Uint8Array(body ?? new ArrayBuffer(0)));
      const headers = new Headers(request.headers);
      headers.delete("host");
      const answer = await fetch(`${base}${pathname}${search}`, { method: request.method, headers, body });
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers: { "content-type": answer.headers.get("content-type") ?? "" } });
    },
    websocket: {
      maxPayloadLength: UNLIMITED,
      backpressureLimit: UNLIMITED,
      idleTimeout: 0,
      open(ws: ServerWebSocket<Link>) {
        const link = ws.data;
        const upstream = new WebSocket(link.upstreamUrl);
        upstream.binaryType = "arraybuffer";
        link.upstream = upstream;
        upstream.onopen = () => {
          for (const chunk of link.queue ?? []) upstream.send(chunk);
          link.queue = undefined;
        };
        upstream.onmessage = (event) => {
          if (link.passes <= 0) return;
          link.passes -= 1;
          const chunk = new Uint8Array(event.data as ArrayBuffer);
          taps.message?.("toProver", chunk.length, chunk);
          ws.sendBinary(chunk);
        };
        upstream.onclose = () => {
          if (link.passes > 0) ws.close();
        };
      },
      message(ws, message) {
        const link = ws.data;
        if (link.passes <= 0) return;
        link.passes -= 1;
        const chunk = typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message);
        taps.message?.("toNotary", chunk.length, chunk);
        if (link.queue) link.queue.push(chunk);
        else link.upstream?.send(chunk);
      },
      close(ws) {
        ws.data.upstream?.close();
      },
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}
