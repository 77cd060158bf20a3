/**
 * How a notary client reaches its notary: over the network (`fetch` and WebSockets), or, for the notary a prover
 * embeds, its routes and sockets called in this process (`inProcessTransport`). The embedded notary is then spared a
 * socket, Bun's HTTP client thread and an HTTP parse on each side of each call, about a millisecond a call on
 * loopback, and its relay the WebSocket's upgrade and two loopback hops for each flight of TLS records.
 */
import { untilAborted } from "../../base/abort.ts";
import { AppError } from "../../core/errors.ts";
import type { SocketEnd, SocketListener } from "../../protocol/notary.ts";

export interface NotaryTransport {
  /** One HTTP call: the answer, or a rejection when the request could not be made or `init.signal` aborted it. */
  call(url: string, init: RequestInit): Promise<Response>;
  /**
   * Opens the socket at the WebSocket URL `url`: once open, its end; `notary_unavailable` when it cannot be opened
   * within `timeoutMs`.
   */
  openSocket(url: string, listener: SocketListener, timeoutMs: number): Promise<SocketEnd>;
}

/** The notary takes WebSocket messages of up to 64 KiB; TLS records are at most about 16 KiB anyway. */
const MESSAGE_BYTES = 16 * 1024;

function openWebSocket(url: string, listener: SocketListener, timeoutMs: number): Promise<SocketEnd> {
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new AppError("notary_unavailable", "the notary's relay did not open in time")), timeoutMs);
    ws.onerror = () => (clearTimeout(timer), reject(new AppError("notary_unavailable", "the notary's relay could not be opened")));
    ws.onopen = () => {
      clearTimeout(timer);
      ws.onmessage = (event) => listener.bytes(new Uint8Array(event.data as ArrayBuffer));
      ws.onclose = (event) => listener.closed(event.code, event.reason);
      resolve({
        send(bytes) {
          if (ws.readyState !== WebSocket.OPEN) return false;
          for (let at = 0; at < bytes.length; at += MESSAGE_BYTES) ws.send(bytes.subarray(at, at + MESSAGE_BYTES));
          return true;
        },
        close: () => ws.close(),
      });
    };
  });
}

export const networkTransport: NotaryTransport = { call: (url, init) => fetch(url, init), openSocket: openWebSocket };

/**
 * Calls go to `notary.handle`, which answers as the notary's server would (the same routes, admission first): each
 * request declares its body's length, as an HTTP client would, and is given up when its signal aborts, as fetch
 * would. Sockets open on the notary's modes at once (`openSocket`), refused as an upgrade would be.
 */
export function inProcessTransport(notary: {
  handle(request: Request): Promise<Response>;
  openSocket(url: string, listener: SocketListener): SocketEnd;
}): NotaryTransport {
  return {
    call(url, init) {
      const body = typeof init.body === "string" ? new TextEncoder().encode(init.body) : undefined;
      if (init.body !== undefined && init.body !== null && body === undefined) throw new AppError("internal", "an in-process notary call takes a text body");
      const headers = new Headers(init.headers);
      if (body) headers.set("content-length", String(body.length));
      return untilAborted(notary.handle(new Request(url, { method: init.method, headers, body })), init.signal ?? undefined);
    },
    async openSocket(url, listener) {
      try {
        return notary.openSocket(url, listener);
      } catch (error) {
        // As a refused upgrade reads over the network.
        throw new AppError("notary_unavailable", `the notary's relay could not be opened: ${(error as Error).message}`);
      }
    },
  };
}
