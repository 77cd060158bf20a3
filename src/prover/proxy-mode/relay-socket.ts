/**
 * The prover's end of a proxy session's relay: a socket to the notary (a WebSocket, or the embedded notary's in this
 * process), which passes every byte to the target's TCP connection and back. Seen as a Duplex, so that `node:tls` runs over it; the start of both
 * directions is recorded as it passes (the key derivation reads the hellos from it).
 */
import { Duplex } from "node:stream";
import { AppError } from "../../core/errors.ts";
import type { SocketEnd, SocketListener } from "../../protocol/notary.ts";
import { RELAY_ENDED_CLOSE_CODE, relayEndedError } from "../../protocol/proxy-mode.ts";
import type { RelayedBytes } from "../../tls/verify-session.ts";

/**
 * Bytes recorded of each direction: the hellos come first and fit in a record of at most 16 KiB each (a hello
 * split over several records too). The rest is not kept: it would be another copy of the request and answer.
 */
const HANDSHAKE_BYTES = 64 * 1024;

export interface RelaySocket {
  duplex: Duplex;
  /** The first HANDSHAKE_BYTES of each direction, as relayed (a record cut at the end is left for the reader to drop). */
  handshakeBytes(): RelayedBytes;
  /** How many bytes came from the target in all (only the first HANDSHAKE_BYTES are kept). */
  receivedBytes(): number;
  /** Resolves once the notary's side closed (after the target's last byte) or `close` ran. */
  readonly closed: Promise<void>;
  /** Why the notary ended the relay early (a limit, a timeout), as its close reason said; undefined otherwise. */
  endedByNotary(): AppError | undefined;
  close(): void;
}

/** The first HANDSHAKE_BYTES of one direction. */
class Recording {
  private chunks: Uint8Array[] = [];
  private length = 0;
  /** Every byte seen, kept or not. */
  total = 0;
  add(bytes: Uint8Array) {
    this.total += bytes.length;
    const room = HANDSHAKE_BYTES - this.length;
    if (room <= 0) return;
    const kept = bytes.length <= room ? bytes : bytes.slice(0, room);
    this.chunks.push(kept);
    this.length += kept.length;
  }
  bytes(): Uint8Array {
    return Buffer.concat(this.chunks, this.length);
  }
}

/**
 * The relay over the socket `open` opens (the notary client's, by its transport): the Duplex reads what the notary
 * sends and writes to it, and the notary's close ends both.
 */
export async function openRelaySocket(open: (listener: SocketListener) => Promise<SocketEnd>): Promise<RelaySocket> {
  const toServer = new Recording();
  const fromServer = new Recording();
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  let endedByNotary: AppError | undefined;
  // Created before the socket opens: the notary's first bytes may come in the turn it opens.
  const duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      const bytes = new Uint8Array(chunk);
      if (!socket.send(bytes)) return done(new AppError("target_request_failed", "the relay to the target closed"));
      toServer.add(bytes);
      done();
    },
    final(done) {
      socket.close();
      done();
    },
  });
  const socket = await open({
    bytes(bytes) {
      fromServer.add(bytes);
      duplex.push(bytes);
    },
    closed(code, reason) {
      if (code === RELAY_ENDED_CLOSE_CODE) endedByNotary = relayEndedError(reason) ?? new AppError("session_failed", "the notary ended the relay early");
      duplex.push(null);
      markClosed();
    },
  });
  return {
    duplex,
    handshakeBytes: () => ({ clientToServer: toServer.bytes(), serverToClient: fromServer.bytes() }),
    receivedBytes: () => fromServer.total,
    closed,
    endedByNotary: () => endedByNotary,
    close() {
      socket.close();
      markClosed();
    },
  };
}
