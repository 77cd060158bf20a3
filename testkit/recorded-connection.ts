import { connect } from "node:net";
import { concatBytes } from "@noble/hashes/utils.js";
import type { ByteTransport } from "../src/tls/client/exchange.ts";
import type { RelayedBytes } from "../src/tls/verify-session.ts";

/** A TCP connection as the client's transport, both directions recorded as a notary's relay records them. */
export interface RecordedConnection {
  transport: ByteTransport;
  relayed(): RelayedBytes;
}

export async function recordedConnection(port: number): Promise<RecordedConnection> {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const toServer: Uint8Array[] = [];
  const toClient: Uint8Array[] = [];
  const transport: ByteTransport = {
    write(bytes) {
      toServer.push(bytes.slice());
      socket.write(bytes);
    },
    end: () => void socket.end(),
    start(onData, onEnd) {
      let ended = false;
      const finish = (error?: Error) => {
        if (!ended) (ended = true), onEnd(error);
      };
      socket.on("data", (chunk: Buffer) => {
        const bytes = new Uint8Array(chunk);
        toClient.push(bytes);
        onData(bytes);
      });
      socket.once("error", finish);
      socket.once("end", () => finish());
      socket.once("close", () => finish());
    },
  };
  return { transport, relayed: () => ({ clientToServer: concatBytes(...toServer), serverToClient: concatBytes(...toClient) }) };
}

