/**
 * The TLS 1.3 client's byte port: bytes out, bytes in, the end of input. A TCP socket, the notary's relay
 * WebSocket seen as a Duplex, or any stream fits it.
 */
import type { Duplex } from "node:stream";

export interface ByteTransport {
  write(bytes: Uint8Array): void;
  /** This side sends no more (a TCP half-close; the relay's close). */
  end(): void;
  /** Gives every received chunk to `onData` in order, then calls `onEnd` once (with the error when the transport failed). */
  start(onData: (bytes: Uint8Array) => void, onEnd: (error?: Error) => void): void;
}

/** A Duplex (a net.Socket, the relay socket) as a ByteTransport. */
export function duplexTransport(stream: Duplex): ByteTransport {
  return {
    write: (bytes) => void stream.write(bytes),
    end: () => void stream.end(),
    start(onData, onEnd) {
      let ended = false;
      const finish = (error?: Error) => {
        if (ended) return;
        ended = true;
        onEnd(error);
      };
      stream.on("data", (chunk: Buffer) => onData(new Uint8Array(chunk)));
      stream.once("error", (error) => finish(error));
      stream.once("end", () => finish());
      stream.once("close", () => finish());
    },
  };
}
