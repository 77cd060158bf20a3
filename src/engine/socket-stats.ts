/**
 * The engine's WebSockets seen from outside the engine. tlsn-wasm dials them with the global WebSocket, so this
 * process counts, per open socket, the bytes the engine handed to send() and those it was delivered. With the
 * notary's counts of the same socket this tells a stalled setup's story: bytes the engine never wrote, bytes
 * Bun still holds (bufferedAmount), or an engine that simply waits (BENCHMARKS.md, "Stalled setups").
 */

export interface EngineSocketStats {
  /** The socket's URL path and query, its single-use token left out. */
  target: string;
  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  readyState: number;
  sentBytes: number;
  receivedBytes: number;
  /** Handed to send() and not yet written to the connection. */
  bufferedBytes: number;
}

interface Counted {
  url: URL;
  socket: WebSocket;
  sentBytes: number;
  receivedBytes: number;
}

const open = new Set<Counted>();

const byteLength = (data: unknown): number =>
  typeof data === "string"
    ? Buffer.byteLength(data)
    : data instanceof ArrayBuffer || ArrayBuffer.isView(data)
      ? data.byteLength
      : data instanceof Blob
        ? data.size
        : 0;

let installed = false;

/** Replaces the global WebSocket with one that counts its bytes; once per process, before the engine dials. */
export function countEngineSockets(): void {
  if (installed) return;
  installed = true;
  const Native = globalThis.WebSocket;
  class CountedWebSocket extends Native {
    private readonly counted: Counted;

    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      const counted: Counted = { url: new URL(String(url)), socket: this, sentBytes: 0, receivedBytes: 0 };
      this.counted = counted;
      open.add(counted);
      this.addEventListener("message", (event) => void (counted.receivedBytes += byteLength(event.data)));
      this.addEventListener("close", () => void open.delete(counted));
    }

    override send(data: Parameters<WebSocket["send"]>[0]): void {
      this.counted.sentBytes += byteLength(data);
      super.send(data);
    }
  }
  globalThis.WebSocket = CountedWebSocket as typeof WebSocket;
}

/** The open engine sockets whose URL has `search` among its query values (a notary session id). */
export function engineSocketStats(search: string): EngineSocketStats[] {
  return [...open]
    .filter(({ url }) => [...url.searchParams.values()].includes(search))
    .map(({ url, socket, sentBytes, receivedBytes }) => {
      const query = new URLSearchParams(url.searchParams);
      query.delete("token");
      const rest = query.toString();
      return {
        target: `${url.pathname}${rest ? `?${rest}` : ""}`,
        readyState: socket.readyState,
        sentBytes,
        receivedBytes,
        bufferedBytes: socket.bufferedAmount,
      };
    });
}

/** The stats in words, for a stalled setup's error. */
export const socketStatsText = (stats: readonly EngineSocketStats[]): string =>
  stats.length === 0
    ? "the engine's MPC socket is closed"
    : stats
        .map((s) => `the engine handed its MPC socket ${s.sentBytes} bytes (${s.bufferedBytes} not yet written) and was delivered ${s.receivedBytes}`)
        .join("; ");
