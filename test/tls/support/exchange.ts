import { type Server, type Socket, createServer as createTcpServer, connect as tcpConnect } from "node:net";
import { createServer as createHttpsServer } from "node:https";
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from "node:tls";
import { concatBytes } from "@noble/hashes/utils.js";
import type { RelayedBytes } from "../../../src/tls/verify-session.ts";
import { startServerProcess } from "../../../testkit/server-process.ts";
import { TARGET_HOST, type ServerIdentity } from "../../../testkit/tls-fixture.ts";

/** A local HTTPS target answering every GET with `body`. */
export interface Target {
  port: number;
  stop(): Promise<void>;
}

const portOf = (server: Server): number => {
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
};

export async function startHttpsTarget(
  identity: ServerIdentity,
  /** `requestCert`: the server asks for a client certificate (and takes a client without one). */
  options: { version: "TLSv1.2" | "TLSv1.3"; ciphers?: string; ecdhCurve?: string; requestCert?: boolean },
  body: Uint8Array | string,
): Promise<Target> {
  const server = createHttpsServer(
    { key: identity.leafKeyPem, cert: identity.chainPem, minVersion: options.version, maxVersion: options.version, ...(options.ciphers ? { ciphers: options.ciphers } : {}), ...(options.ecdhCurve ? { ecdhCurve: options.ecdhCurve } : {}), ...(options.requestCert ? { requestCert: true, rejectUnauthorized: false } : {}) },
    (_request, response) => {
      response.setHeader("content-type", "text/plain");
      response.end(body);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: portOf(server), stop: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * `openssl s_server` limited to one TLS 1.3 suite (Bun's TLS 1.3 server cannot be limited to one): `-www` answers a
 * status page; with `serveFiles`, `-WWW` answers GET /<file> with that file from `dir`. It dies with the test process.
 */
export async function startOpensslTls13Target(identity: ServerIdentity, dir: string, suite: string, serveFiles = false): Promise<Target & { pid: number }> {
  await Bun.write(`${dir}/s_server-cert.pem`, identity.chainPem);
  await Bun.write(`${dir}/s_server-key.pem`, identity.leafKeyPem);
  const command = ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", "s_server-cert.pem", "-key", "s_server-key.pem", "-tls1_3", "-ciphersuites", suite, serveFiles ? "-WWW" : "-www"];
  const { pid, port, stop } = await startServerProcess(command, (output) => Number(/ACCEPT 127\.0\.0\.1:(\d+)/.exec(output)?.[1]) || undefined, dir);
  return { pid, port, stop };
}

/** One HTTPS exchange as a prover makes it through a notary: relayed bytes, the client's key log, what it read. */
export interface RecordedExchange {
  relayed: RelayedBytes;
  keylog: string[];
  request: Uint8Array;
  /** Every byte the client read from the TLS socket: the HTTP answer. */
  answer: Uint8Array;
  /** The TLS session to resume with, when the server offered one. */
  session: Buffer | undefined;
  cipher: string;
  protocol: string | null;
  /** The server resumed the session given in `client.session`. */
  reused: boolean;
}

/**
 * A recording TCP relay (the notary's part) in front of `targetPort`, and a node:tls client (the prover's) that
 * sends one GET with `Connection: close` and reads to the end. Resolves once both relayed sockets closed.
 */
export async function relayedExchange(targetPort: number, client: ConnectionOptions = {}, path = "/"): Promise<RecordedExchange> {
  const toServer: Uint8Array[] = [];
  const toClient: Uint8Array[] = [];
  let relayClosed!: () => void;
  const closed = new Promise<void>((resolve) => (relayClosed = resolve));
  const relay = createTcpServer((proverSide: Socket) => {
    const serverSide = tcpConnect(targetPort, "127.0.0.1");
    let open = 2;
    const onClose = () => --open === 0 && relayClosed();
    proverSide.on("data", (chunk: Buffer) => {
      toServer.push(new Uint8Array(chunk));
      serverSide.write(chunk);
    });
    serverSide.on("data", (chunk: Buffer) => {
      toClient.push(new Uint8Array(chunk));
      proverSide.write(chunk);
    });
    proverSide.on("end", () => serverSide.end());
    serverSide.on("end", () => proverSide.end());
    proverSide.on("close", onClose);
    serverSide.on("close", onClose);
    proverSide.on("error", () => serverSide.destroy());
    serverSide.on("error", () => proverSide.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const keylog: string[] = [];
  const request = new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nConnection: close\r\n\r\n`);
  const answer: Uint8Array[] = [];
  let session: Buffer | undefined;
  const socket: TLSSocket = tlsConnect({ host: "127.0.0.1", port: portOf(relay), servername: TARGET_HOST, ...client });
  socket.on("keylog", (line) => keylog.push(line.toString()));
  socket.on("session", (s) => (session = s));
  socket.on("data", (chunk: Buffer) => answer.push(new Uint8Array(chunk)));
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", resolve);
    socket.once("error", reject);
  });
  const cipher = socket.getCipher().standardName ?? socket.getCipher().name;
  const protocol = socket.getProtocol();
  const reused = socket.isSessionReused();
  socket.write(request);
  await new Promise<void>((resolve, reject) => {
    socket.once("end", resolve);
    socket.once("error", reject);
  });
  socket.end();
  await closed;
  relay.close();
  return {
    relayed: { clientToServer: concatBytes(...toServer), serverToClient: concatBytes(...toClient) },
    keylog,
    request,
    answer: concatBytes(...answer),
    session,
    cipher,
    protocol,
    reused,
  };
}
