import { connect } from "node:net";
import { concatBytes } from "@noble/hashes/utils.js";
import { type ByteTransport, type RequestPart, type Tls13ClientOptions, type Tls13Exchange, runTls13Exchange } from "../../../src/tls/client/exchange.ts";
import type { RelayedBytes } from "../../../src/tls/verify-session.ts";

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

const encoder = new TextEncoder();

/** `GET <path>` with Host, then `Authorization: <credential>` with the credential hidden, then the rest revealed. */
export function requestWithHiddenCredential(host: string, credential: string, path = "/"): RequestPart[] {
  return [
    { bytes: encoder.encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: `), hidden: false },
    { bytes: encoder.encode(credential), hidden: true },
    { bytes: encoder.encode("\r\nAccept: */*\r\nConnection: close\r\n\r\n"), hidden: false },
  ];
}

export interface RecordedExchange extends Tls13Exchange {
  relayed: RelayedBytes;
}

/** One exchange with the server at `port`, recorded. */
export async function recordedExchange(port: number, request: RequestPart[], options: Tls13ClientOptions): Promise<RecordedExchange> {
  const connection = await recordedConnection(port);
  const exchange = await runTls13Exchange(connection.transport, request, options);
  return { ...exchange, relayed: connection.relayed() };
}

/** Whether `needle` occurs in `haystack`. */
export const contains = (haystack: Uint8Array, needle: string): boolean => Buffer.from(haystack).indexOf(Buffer.from(needle)) >= 0;
