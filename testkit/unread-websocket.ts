import { randomBytes } from "node:crypto";
import { type Socket, connect } from "node:net";

/**
 * A WebSocket client over a plain TCP connection that makes its upgrade and frames itself, so that a test decides
 * when it reads: while it does not, the server's socket backs up for real (its kernel buffers fill, then its own).
 * It sends binary messages and keeps the binary payload it reads; nothing else of the protocol.
 */
export interface UnreadWebSocket {
  send(bytes: Uint8Array): void;
  /** Stops reading the connection: what the server sends stays in the kernel's buffers, then in the server's. */
  stopReading(): void;
  resumeReading(): void;
  /** The payload of every binary message read so far, in order. */
  received(): Uint8Array;
  receivedLength(): number;
  close(): void;
}

/** Opens `url` (ws://host:port/path?query); rejects with the server's status line when it does not switch protocols. */
export function openUnreadWebSocket(url: string): Promise<UnreadWebSocket> {
  const { hostname, port, pathname, search } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  const payload: Buffer[] = [];
  let payloadLength = 0;
  let pending: Buffer = Buffer.alloc(0);
  let upgraded = false;

  const readFrames = () => {
    for (;;) {
      const frame = frameAt(pending);
      if (!frame) return;
      // Binary messages and their continuations; a server's frames are never masked.
      if (frame.opcode === 0 || frame.opcode === 2) {
        payload.push(pending.subarray(frame.start, frame.end));
        payloadLength += frame.end - frame.start;
      }
      pending = pending.subarray(frame.end);
    }
  };

  return new Promise((resolve, reject) => {
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      if (!upgraded) {
        const headEnd = pending.indexOf("\r\n\r\n");
        if (headEnd < 0) return;
        const statusLine = pending.subarray(0, pending.indexOf("\r\n")).toString("latin1");
        if (!statusLine.startsWith("HTTP/1.1 101 ")) {
          socket.destroy();
          return reject(new Error(`the server answered the upgrade with ${statusLine}`));
        }
        upgraded = true;
        pending = pending.subarray(headEnd + 4);
        resolve({
          send: (bytes) => socket.write(maskedFrame(bytes)),
          stopReading: () => socket.pause(),
          resumeReading: () => socket.resume(),
          received: () => new Uint8Array(Buffer.concat(payload)),
          receivedLength: () => payloadLength,
          close: () => socket.destroy(),
        });
      }
      readFrames();
    });
    socket.write(
      `GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
}

/** The frame at the start of `bytes` (its opcode and where its payload lies), or undefined while it is incomplete. */
function frameAt(bytes: Buffer): { opcode: number; start: number; end: number } | undefined {
  if (bytes.length < 2) return undefined;
  const opcode = bytes[0]! & 0x0f;
  const short = bytes[1]! & 0x7f;
  const headerLength = short === 126 ? 4 : short === 127 ? 10 : 2;
  if (bytes.length < headerLength) return undefined;
  const length = short === 126 ? bytes.readUInt16BE(2) : short === 127 ? Number(bytes.readBigUInt64BE(2)) : short;
  const end = headerLength + length;
  return bytes.length < end ? undefined : { opcode, start: headerLength, end };
}

/** One final binary frame carrying `bytes`, masked as a client's must be (RFC 6455, 5.3). */
function maskedFrame(bytes: Uint8Array): Buffer {
  const lengthBytes = bytes.length < 126 ? 0 : bytes.length < 65_536 ? 2 : 8;
  const header = Buffer.alloc(2 + lengthBytes);
  header[0] = 0x82;
  if (lengthBytes === 0) header[1] = 0x80 | bytes.length;
  else if (lengthBytes === 2) {
    header[1] = 0x80 | 126;
    header.writeUInt16BE(bytes.length, 2);
  } else {
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(bytes.length), 2);
  }
  const mask = randomBytes(4);
  const masked = Buffer.from(bytes);
  for (let i = 0; i < masked.length; i++) masked[i] = masked[i]! ^ mask[i % 4]!;
  return Buffer.concat([header, mask, masked]);
}
