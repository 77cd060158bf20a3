/**
 * A TLS server on loopback whose answers a test writes byte for byte: it reads a request head, then runs the test's
 * script on the connection (write this, wait for that, close). The TLS version, the suites and the ALPN protocols
 * it offers are the test's choice. What a misbehaving target, or a prover's accomplice, can send.
 */
import { type TLSSocket, createServer } from "node:tls";
import type { ServerIdentity } from "./tls-fixture.ts";

export interface ScriptedTargetOptions {
  version: "TLSv1.2" | "TLSv1.3";
  /** TLS 1.2 suites (OpenSSL names). */
  ciphers?: string;
  /** Protocols the server chooses from by ALPN. */
  alpn?: string[];
}

/** What a script gets: the connection, the request head it read, and a promise that resolves once the test releases it. */
export interface ScriptContext {
  socket: TLSSocket;
  request: string;
  released: Promise<void>;
}

export interface ScriptedTarget {
  port: number;
  /** Lets every script waiting on `released` go on. */
  release(): void;
  stop(): void;
}

export async function startScriptedTarget(
  identity: ServerIdentity,
  options: ScriptedTargetOptions,
  script: (context: ScriptContext) => Promise<void> | void,
): Promise<ScriptedTarget> {
  let release!: () => void;
  let released = new Promise<void>((resolve) => (release = resolve));
  const server = createServer(
    {
      cert: identity.chainPem,
      key: identity.leafKeyPem,
      minVersion: options.version,
      maxVersion: options.version,
      ...(options.ciphers ? { ciphers: options.ciphers } : {}),
      ...(options.alpn ? { ALPNProtocols: options.alpn } : {}),
    },
    (socket) => {
      let head = "";
      socket.on("error", () => socket.destroy());
      const onData = (chunk: Buffer) => {
        head += chunk.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        socket.off("data", onData);
        void Promise.resolve(script({ socket, request: head, released })).catch(() => socket.destroy());
      };
      socket.on("data", onData);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return {
    port: address.port,
    release() {
      release();
      released = new Promise<void>((resolve) => (release = resolve));
    },
    stop() {
      release();
      server.close();
    },
  };
}
