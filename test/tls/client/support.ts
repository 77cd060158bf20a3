import { type ByteTransport, type RequestPart, type Tls13ClientOptions, type Tls13Exchange, runTls13Exchange } from "../../../src/tls/client/exchange.ts";
import type { RelayedBytes } from "../../../src/tls/verify-session.ts";
import { recordedConnection } from "../../../testkit/recorded-connection.ts";

export { recordedConnection } from "../../../testkit/recorded-connection.ts";

const encoder = new TextEncoder();

/** `GET <path>` with Host, then `Authorization: <credential>` with the credential hidden, then the rest revealed. */
export function requestWithHiddenCredential(host: string, credential: string, path = "/"): RequestPart[] {
  return [
    // The credential's header last, as the honest prover writes it: nothing revealed after it but the head's end.
    { bytes: encoder.encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAccept: */*\r\nConnection: close\r\nAuthorization: `), hidden: false },
    { bytes: encoder.encode(credential), hidden: true },
    { bytes: encoder.encode("\r\n\r\n"), hidden: false },
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

/** An in-memory ByteTransport: what the client writes is kept, what the test delivers is what it receives. */
export interface ScriptedTransport {
  transport: ByteTransport;
  written: Uint8Array[];
  ended: boolean;
  deliver(bytes: Uint8Array): void;
  /** The server's side ends (with `error`: fails). */
  finish(error?: Error): void;
}

export function scriptedTransport(): ScriptedTransport {
  let onData: (bytes: Uint8Array) => void = () => {};
  let onEnd: (error?: Error) => void = () => {};
  const scripted: ScriptedTransport = {
    written: [],
    ended: false,
    transport: {
      write: (bytes) => void scripted.written.push(bytes.slice()),
      end: () => void (scripted.ended = true),
      start: (data, end) => {
        onData = data;
        onEnd = end;
      },
    },
    deliver: (bytes) => onData(bytes),
    finish: (error) => onEnd(error),
  };
  return scripted;
}
