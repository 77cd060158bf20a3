/**
 * A TCP proxy on loopback between one process and a server (a prover and PostgreSQL, a notary and a target): the
 * test can pause the link (bytes are held until resumed: the server seems to stall) or cut it (every connection
 * closed, new ones closed at once: the server seems gone), for that one process only, without touching the server
 * itself; and read every byte each connection carried.
 */
import { type Server, type Socket, createServer, connect } from "node:net";

export interface TcpProxy {
  port: number;
  /** Holds every byte, both ways, until `resume`. */
  pause(): void;
  resume(): void;
  /** Closes every connection and closes new ones at once, until `restore`. */
  cut(): void;
  restore(): void;
  /**
   * From now on, each new connection has the byte at `offset` of what the server sends changed (a forger on the
   * path); without an offset, new connections are left alone again.
   */
  changeByteToClient(offset?: number): void;
  /** How many connections are open through it. */
  connections(): number;
  /** Every byte each connection carried, in the order they were accepted: to the server, and back to the client. */
  recorded(): { toServer: Uint8Array; toClient: Uint8Array }[];
  close(): Promise<void>;
}

interface Link {
  sockets: [Socket, Socket];
  /** Bytes held while paused, per direction: to the server, to the client. */
  held: [Buffer[], Buffer[]];
  /** Bytes forwarded to the client so far. */
  toClient: number;
  /** What passed each way, as forwarded: to the server, to the client. */
  passed: [Buffer[], Buffer[]];
}

/** The chunk with the byte at `offset` of its stream flipped, when that byte is in it; the stream so far was `before` bytes. */
function withByteChanged(chunk: Buffer, before: number, offset: number | undefined): Buffer {
  if (offset === undefined || offset < before || offset >= before + chunk.length) return chunk;
  const changed = Buffer.from(chunk);
  changed[offset - before] = changed[offset - before]! ^ 0x01;
  return changed;
}

export async function startTcpProxy(to: { host: string; port: number }): Promise<TcpProxy> {
  const links = new Set<Link>();
  const accepted: Link[] = [];
  let paused = false;
  let cut = false;
  let changeAt: number | undefined;
  const flush = (link: Link) => {
    for (const direction of [0, 1] as const) {
      for (const chunk of link.held[direction].splice(0)) link.sockets[direction].write(chunk);
    }
  };
  const server: Server = createServer((client) => {
    if (cut) return void client.destroy();
    const upstream = connect(to.port, to.host);
    const link: Link = { sockets: [upstream, client], held: [[], []], toClient: 0, passed: [[], []] };
    const changeThis = changeAt;
    links.add(link);
    accepted.push(link);
    const forward = (direction: 0 | 1) => (received: Buffer) => {
      let chunk = received;
      if (direction === 1) {
        chunk = withByteChanged(received, link.toClient, changeThis);
        link.toClient += chunk.length;
      }
      link.passed[direction].push(chunk);
      if (paused) link.held[direction].push(chunk);
      else link.sockets[direction].write(chunk);
    };
    client.on("data", forward(0));
    upstream.on("data", forward(1));
    const end = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of link.sockets) socket.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the TCP proxy has no port");
  return {
    port: address.port,
    pause: () => void (paused = true),
    resume() {
      paused = false;
      for (const link of links) flush(link);
    },
    cut() {
      cut = true;
      for (const link of [...links]) for (const socket of link.sockets) socket.destroy();
      links.clear();
    },
    restore: () => void (cut = false),
    changeByteToClient: (offset) => void (changeAt = offset),
    connections: () => links.size,
    recorded: () => accepted.map((link) => ({ toServer: new Uint8Array(Buffer.concat(link.passed[0])), toClient: new Uint8Array(Buffer.concat(link.passed[1])) })),
    close() {
      for (const link of [...links]) for (const socket of link.sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
