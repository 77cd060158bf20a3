import type { ServerWebSocket, Socket } from "bun";
import { AES_GCM_TLS12_OVERHEAD, RecordMeter } from "../tls/record-meter.ts";

/**
 * Both sides of tlsn-wasm are WebSocket *clients*: the prover dials a socket that must carry raw bytes to
 * the target's TCP port, and a notary's Verifier dials a socket that must carry bytes to a prover whose
 * socket the notary accepted. This loopback server provides both kinds of endpoint, each behind a
 * single-use random token so that nothing else on the machine can use it as a relay.
 */

type Chunk = Uint8Array;

interface TcpEndpoint {
  kind: "tcp";
  hostname: string;
  port: number;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  state: TcpState;
  socket?: ServerWebSocket<SocketData>;
}

/** What happened on a TCP endpoint, read by the caller to explain an engine failure. */
export interface TcpState {
  connected: boolean;
  failure?: "refused" | "timeout" | "reset" | "response_timeout" | "closed";
  bytesFromTarget: number;
  /** Application data the target sent, as its records' headers tell (record-meter.ts): the plaintext the engine receives. */
  plaintextFromTarget: number;
  /** The target closed the connection while the engine still used it. */
  closedByTarget?: boolean;
}

interface PeerEndpoint {
  kind: "peer";
  /** Bytes the wasm side sends go here. */
  onData: (data: Chunk) => void;
  onClose: () => void;
  /** Bytes waiting until the wasm side is ready to read them. */
  pending: Chunk[];
  socket?: ServerWebSocket<SocketData>;
  /** Set by the owner once the wasm side's connect() resolved: bytes sent before that are lost by the client. */
  released: boolean;
  closed: boolean;
}

type Endpoint = TcpEndpoint | PeerEndpoint;

interface SocketData {
  token: string;
  endpoint?: Endpoint;
  tcp?: Socket<undefined>;
  queue?: Chunk[];
  /** Armed while the target owes an answer to bytes written to it. */
  silence?: Timer;
}

export interface PeerHandle {
  /** The URL the wasm side dials. */
  url: string;
  /** Delivers bytes to the wasm side (queued until released). */
  send(data: Chunk): void;
  /** Call once the wasm side's connect() has resolved: queued bytes flow from then on. */
  release(): void;
  close(): void;
}

export interface TcpHandle {
  url: string;
  state: TcpState;
  /** The longest silence allowed of a target that owes an answer (PROVER_RESPONSE_TIMEOUT). */
  responseTimeoutMs: number;
  /** Cuts the connection (a session deadline passed); the engine then fails the exchange. */
  close(): void;
}

export interface LoopbackBridge {
  openPeer(events: { onData: (data: Chunk) => void; onClose: () => void }): PeerHandle;
  openTcp(target: { hostname: string; port: number; connectTimeoutMs: number; responseTimeoutMs: number }): TcpHandle;
  stop(): void;
}

const toChunk = (message: string | Buffer): Chunk =>
  typeof message === "string" ? new TextEncoder().encode(message) : new Uint8Array(message);

export function startLoopbackBridge(): LoopbackBridge {
  return new Bridge();
}

const newToken = () => Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("hex");

/** The loopback server and its single-use endpoints, each found by the token of the URL it was handed out with. */
class Bridge implements LoopbackBridge {
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly server = Bun.serve<SocketData>({
    hostname: "127.0.0.1",
    port: 0,
    // MPC sockets may be quiet for a long time while a warm session waits for its request.
    idleTimeout: 0,
    fetch: (request, server) => {
      const token = new URL(request.url).searchParams.get("token") ?? "";
      const endpoint = this.endpoints.get(token);
      if (!endpoint) return new Response("unknown endpoint", { status: 404 });
      this.endpoints.delete(token); // single use
      if (server.upgrade(request, { data: { token, endpoint } })) return undefined;
      return new Response("websocket expected", { status: 400 });
    },
    websocket: {
      // MPC messages can be large; Bun's default per-message limit is 16 MiB.
      maxPayloadLength: 256 * 1024 * 1024,
      backpressureLimit: 64 * 1024 * 1024,
      // Past the limit a send is dropped (Bun returns 0): a lost MPC message would stall both sides for good.
      closeOnBackpressureLimit: true,
      idleTimeout: 0,
      open: (ws) => {
        const endpoint = ws.data.endpoint;
        if (endpoint?.kind === "peer") {
          if (endpoint.closed) return ws.close();
          endpoint.socket = ws;
          flush(endpoint);
        } else if (endpoint?.kind === "tcp") {
          if (endpoint.state.failure) return ws.close();
          ws.data.queue = [];
          endpoint.socket = ws;
          connectTcp(ws, endpoint);
        }
      },
      message: (ws, message) => {
        const endpoint = ws.data.endpoint;
        const chunk = toChunk(message);
        if (endpoint?.kind === "peer") endpoint.onData(chunk);
        else if (endpoint?.kind === "tcp") {
          awaitAnswer(ws, endpoint);
          if (ws.data.tcp) ws.data.tcp.write(chunk);
          else ws.data.queue?.push(chunk);
        }
      },
      close: (ws) => {
        clearTimeout(ws.data.silence);
        const endpoint = ws.data.endpoint;
        if (endpoint?.kind === "peer" && !endpoint.closed) {
          endpoint.closed = true;
          endpoint.onClose();
        }
        ws.data.tcp?.end();
      },
    },
  });

  openPeer({ onData, onClose }: { onData: (data: Chunk) => void; onClose: () => void }): PeerHandle {
    const token = newToken();
    const endpoint: PeerEndpoint = { kind: "peer", onData, onClose, pending: [], released: false, closed: false };
    this.endpoints.set(token, endpoint);
    return {
      url: this.urlFor(token),
      send(data) {
        if (endpoint.closed) return;
        endpoint.pending.push(data);
        flush(endpoint);
      },
      release() {
        endpoint.released = true;
        flush(endpoint);
      },
      close: () => {
        this.endpoints.delete(token);
        endpoint.closed = true;
        endpoint.pending = [];
        endpoint.socket?.close();
      },
    };
  }

  openTcp({ hostname, port, connectTimeoutMs, responseTimeoutMs }: { hostname: string; port: number; connectTimeoutMs: number; responseTimeoutMs: number }): TcpHandle {
    const token = newToken();
    const state: TcpState = { connected: false, bytesFromTarget: 0, plaintextFromTarget: 0 };
    const endpoint: TcpEndpoint = { kind: "tcp", hostname, port, connectTimeoutMs, responseTimeoutMs, state };
    this.endpoints.set(token, endpoint);
    return {
      url: this.urlFor(token),
      state,
      responseTimeoutMs,
      close: () => {
        this.endpoints.delete(token);
        state.failure ??= "closed";
        endpoint.socket?.close();
      },
    };
  }

  stop(): void {
    this.endpoints.clear();
    this.server.stop(true);
  }

  private urlFor(token: string): string {
    return `ws://127.0.0.1:${this.server.port}/?token=${token}`;
  }
}

/** Dials the target for a TCP endpoint's socket; bytes the engine sent meanwhile wait in the socket's queue. */
function connectTcp(ws: ServerWebSocket<SocketData>, endpoint: TcpEndpoint): void {
  // The engine speaks TLS 1.2 with AES-GCM only: its records' overhead is known.
  const meter = new RecordMeter(AES_GCM_TLS12_OVERHEAD);
  const timer = setTimeout(() => {
    endpoint.state.failure = "timeout";
    ws.close();
  }, endpoint.connectTimeoutMs);
  Bun.connect({
    hostname: endpoint.hostname,
    port: endpoint.port,
    socket: {
      open(socket) {
        clearTimeout(timer);
        if (ws.readyState !== 1) return void socket.end();
        endpoint.state.connected = true;
        ws.data.tcp = socket;
        for (const chunk of ws.data.queue ?? []) socket.write(chunk);
        ws.data.queue = undefined;
      },
      data(_socket, data) {
        clearTimeout(ws.data.silence);
        ws.data.silence = undefined;
        endpoint.state.bytesFromTarget += data.length;
        meter.feed(data);
        endpoint.state.plaintextFromTarget = meter.plaintextBytes;
        ws.sendBinary(data);
      },
      close() {
        if (ws.readyState === 1) endpoint.state.closedByTarget = true;
        ws.close();
      },
      error() {
        endpoint.state.failure ??= "reset";
        ws.close();
      },
    },
  }).catch(() => {
    clearTimeout(timer);
    endpoint.state.failure ??= "refused";
    ws.close();
  });
}

/** A target that accepts bytes and stays silent longer than its response timeout is cut off. */
function awaitAnswer(ws: ServerWebSocket<SocketData>, endpoint: TcpEndpoint): void {
  ws.data.silence ??= setTimeout(() => {
    endpoint.state.failure ??= "response_timeout";
    ws.close();
  }, endpoint.responseTimeoutMs);
}

/** Sends a peer's queued bytes once its wasm side is both connected and released. */
function flush(endpoint: PeerEndpoint): void {
  if (!endpoint.socket || !endpoint.released) return;
  for (const chunk of endpoint.pending) endpoint.socket.sendBinary(chunk);
  endpoint.pending = [];
}
