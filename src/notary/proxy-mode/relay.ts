/**
 * Proxy mode's relay: one TCP connection from the notary to the target, fed by the prover's WebSocket, with
 * both directions recorded exactly as they passed. The recording is what the notary later decrypts with the
 * keys the prover reveals; nothing the prover says about the bytes is taken on trust.
 */
import { type Socket, connect } from "node:net";
import { concatBytes as concat } from "../../base/bytes.ts";
import { AppError } from "../../core/errors.ts";
import type { RelayedBytes } from "../../tls/verify-session.ts";
import { MAX_RELAYED_RECORDS, recordCounter } from "./record-count.ts";

/** Where the relay sends the target's bytes: the prover's socket. */
export interface RelayPeer {
  /** False when the socket is backed up: the relay stops reading the target until `resume`. */
  send(data: Uint8Array): boolean;
  close(): void;
}

export interface RelayLimits {
  /** Most raw bytes the prover may send the target. */
  maxToTarget: number;
  /** Most raw bytes the target may send the prover. */
  maxFromTarget: number;
  /** Most TLS records either direction may carry (record-count.ts); by default MAX_RELAYED_RECORDS. */
  maxRecords?: number;
}

/**
 * What the relay carried, in order, by the notary's wall clock (`at`, milliseconds since the epoch): bytes each way
 * (`through`: that direction's bytes so far, this chunk's included), the end of the prover's side (the relay then
 * ends its side towards the target), the target's FIN, and a reset of the target's connection (never a clean end). relay-log.ts reads times and the connection's end from it.
 */
export type RelayEvent =
  | { kind: "prover-bytes" | "target-bytes"; through: number; at: number }
  | { kind: "prover-end" | "target-fin" | "target-reset"; at: number };

export interface Relay {
  /** Starts relaying the target's bytes to `peer` (none are read before). */
  attach(peer: RelayPeer): void;
  /** Bytes from the prover, for the target. */
  toTarget(data: Uint8Array): void;
  /** The prover's socket drained: reading the target goes on. */
  resume(): void;
  /** The prover's socket closed: the target connection ends. */
  proverClosed(): void;
  /** Resolves when the prover's socket has closed (or `close` ran). */
  readonly ended: Promise<void>;
  /** Why the relay failed (a byte limit passed), if it did. */
  failure(): string | undefined;
  recorded(): RelayedBytes;
  events(): RelayEvent[];
  close(): void;
}

/**
 * Raw bytes a TLS stream of `plaintext` bytes may take: records of 16 KiB carry at most 256 bytes of header,
 * padding and tag, and the handshake fits in 64 KiB.
 */
export const tlsBytesFor = (plaintext: number): number => plaintext + Math.ceil(plaintext / 64) + 64 * 1024;

/** Connects to the target (already resolved and checked); throws `target_unreachable` when it cannot. */
export async function openRelay(address: string, port: number, connectTimeoutMs: number, limits: RelayLimits): Promise<Relay> {
  const tcp = await dial(address, port, connectTimeoutMs);
  const sent: Uint8Array[] = [];
  const received: Uint8Array[] = [];
  let sentBytes = 0;
  let receivedBytes = 0;
  let failed: string | undefined;
  let peer: RelayPeer | undefined;
  const events: RelayEvent[] = [];
  let markEnded!: () => void;
  const ended = new Promise<void>((resolve) => (markEnded = resolve));

  const maxRecords = limits.maxRecords ?? MAX_RELAYED_RECORDS;
  const recordsToTarget = recordCounter();
  const recordsFromTarget = recordCounter();
  const fail = (reason: string) => {
    failed ??= reason;
    relay.close();
  };
  // A reset is no failure of the relay's own: after the target's last byte it loses nothing (a server resets a
  // socket it closed when the client's close_notify reaches it), and before it the records or the answer rule refuse.
  tcp.on("error", () => {
    events.push({ kind: "target-reset", at: Date.now() });
    relay.close();
  });
  tcp.on("end", () => events.push({ kind: "target-fin", at: Date.now() }));
  tcp.on("close", () => peer?.close());

  const relay: Relay = {
    attach(socket) {
      peer = socket;
      tcp.on("data", (chunk: Buffer) => {
        receivedBytes += chunk.length;
        events.push({ kind: "target-bytes", through: receivedBytes, at: Date.now() });
        if (receivedBytes > limits.maxFromTarget) return fail(`the target sent more than this notary relays (${limits.maxFromTarget} bytes)`);
        const bytes = new Uint8Array(chunk);
        if (recordsFromTarget(bytes) > maxRecords) return fail(`the target sent more than ${maxRecords} TLS records, which this notary relays at most`);
        received.push(bytes);
        if (!socket.send(bytes)) tcp.pause();
      });
    },
    toTarget(data) {
      sentBytes += data.length;
      if (sentBytes > limits.maxToTarget) return fail(`the prover sent more than this notary relays (${limits.maxToTarget} bytes)`);
      if (recordsToTarget(data) > maxRecords) return fail(`the prover sent more than ${maxRecords} TLS records, which this notary relays at most`);
      sent.push(data.slice());
      events.push({ kind: "prover-bytes", through: sentBytes, at: Date.now() });
      tcp.write(data);
    },
    resume: () => tcp.resume(),
    proverClosed() {
      events.push({ kind: "prover-end", at: Date.now() });
      tcp.end();
      markEnded();
    },
    ended,
    failure: () => failed,
    recorded: () => ({ clientToServer: concat(sent, sentBytes), serverToClient: concat(received, receivedBytes) }),
    events: () => [...events],
    close() {
      tcp.destroy();
      peer?.close();
      markEnded();
    },
  };
  return relay;
}

/** A target that does not accept within `timeoutMs` (it drops the notary's SYN) is `target_timeout`. */
function dial(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, noDelay: true });
    const refuse = (error = new AppError("target_unreachable", `the notary could not connect to the target on port ${port}`)) => {
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(() => refuse(new AppError("target_timeout", `the target did not accept the notary's connection within ${timeoutMs} ms`)), timeoutMs);
    socket.once("error", () => {
      clearTimeout(timer);
      refuse();
    });
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
  });
}
