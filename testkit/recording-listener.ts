import { type Server, type Socket, createServer } from "node:net";

/** A plain TCP target that keeps every byte each connection sent it, and says when connections end. */
export interface RecordingListener {
  port: number;
  /** The bytes each connection received, in the order they were accepted. */
  connections(): { bytes: Uint8Array; closed: boolean }[];
  /** Resolves once `count` connections were accepted and have all closed. */
  closedConnections(count: number): Promise<void>;
  stop(): void;
}

export async function startRecordingListener(): Promise<RecordingListener> {
  const seen: { chunks: Buffer[]; closed: boolean }[] = [];
  const sockets = new Set<Socket>();
  let changed = () => {};
  const server: Server = createServer((socket) => {
    const entry = { chunks: [] as Buffer[], closed: false };
    seen.push(entry);
    sockets.add(socket);
    socket.on("data", (chunk: Buffer) => entry.chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      entry.closed = true;
      sockets.delete(socket);
      changed();
    });
    changed();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return {
    port: address.port,
    connections: () => seen.map((entry) => ({ bytes: new Uint8Array(Buffer.concat(entry.chunks)), closed: entry.closed })),
    closedConnections(count) {
      const done = () => seen.length >= count && seen.slice(0, count).every((entry) => entry.closed);
      return new Promise<void>((resolve) => {
        const previous = changed;
        changed = () => {
          previous();
          if (done()) resolve();
        };
        if (done()) resolve();
      });
    },
    stop() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
