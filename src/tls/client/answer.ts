/**
 * The server's application data after the handshake, read until it closes (close_notify or the end of its
 * bytes) or the caller finds the answer complete. NewSessionTicket is accepted and ignored (no resumption); a
 * KeyUpdate moves the server's side to its next secret and, when it asks for one, the client answers with its own
 * (RFC 8446 §4.6.3) in an epoch as revealed as the current one; any other post-handshake message and any alert
 * but close_notify is fatal. A server that fails or closes before any answer once the client has updated its keys
 * refused the key update: `target_key_update_refused`.
 */
import { AppError } from "../../core/errors.ts";
import { nextTrafficSecret, trafficKeys } from "../key-schedule.ts";
import { RecordOpener } from "../record-protection.ts";
import { ContentType, HandshakeAssembler, type HandshakeMessage, HandshakeType, alertName, isCloseNotify, isKeyUpdate } from "../records.ts";
import type { CipherSuite } from "../suites.ts";
import { malformed } from "../wire.ts";
import type { EpochWriter } from "./epochs.ts";
import type { IncomingRecords } from "./incoming.ts";
import type { RecordWriter } from "./record-writer.ts";

export interface AnswerLimits {
  /** Most answer bytes (plaintext). */
  maxRecvBytes: number;
  /** Stops reading once it says the answer is whole (an HTTP/1.1 parse); otherwise the server's close ends it. */
  answerComplete?: (recv: Uint8Array) => boolean;
}

const UPDATE_REQUESTED = 1;

function keyUpdateRefused(how: string): AppError {
  return new AppError(
    "target_key_update_refused",
    `the target ${how} after the client's TLS 1.3 KeyUpdate, before any answer: it does not accept the key updates that keep the request's hidden values from the notary in proxy mode. Prove it in MPC mode (T-PROOF-MODE: mpc; the target must offer TLS 1.2), or in proxy mode with T-PROXY-REVEAL: none (the request hidden whole) or request (the notary sees it all)`,
  );
}

/** Bytes appended in place, the buffer doubled as needed: reading a long answer copies it a few times only. */
class GrowingBytes {
  private buffer = new Uint8Array(16 * 1024);
  private length = 0;
  append(bytes: Uint8Array): void {
    if (this.length + bytes.length > this.buffer.length) {
      const grown = new Uint8Array(Math.max(2 * this.buffer.length, this.length + bytes.length));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
    }
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }
  view(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

/** The server's side of the connection after the handshake: its current key, moved on by its KeyUpdates. */
class ServerSide {
  private secret: Uint8Array;
  opener: RecordOpener;
  constructor(
    private readonly suite: CipherSuite,
    firstSecret: Uint8Array,
  ) {
    this.secret = firstSecret;
    this.opener = this.openerOf();
  }
  private openerOf(): RecordOpener {
    return new RecordOpener(this.suite, trafficKeys(this.suite, this.secret), "the server application traffic key", "server");
  }
  update(): void {
    this.secret = nextTrafficSecret(this.suite.hash, this.secret);
    this.opener = this.openerOf();
  }
}

/** Handles one post-handshake message: a ticket ignored, or a KeyUpdate followed (and whether to answer it). */
function postHandshake(message: HandshakeMessage, assembler: HandshakeAssembler, server: ServerSide): "ticket" | "update" | "update requested" {
  if (message.type === HandshakeType.newSessionTicket) return "ticket";
  if (message.type !== HandshakeType.keyUpdate) {
    throw new AppError("target_request_failed", `the target sent post-handshake message type ${message.type}, which the client never asked for`);
  }
  if (!isKeyUpdate(message) || !assembler.empty) throw malformed("the server's KeyUpdate is malformed or does not end its record");
  server.update();
  return message.body[0] === UPDATE_REQUESTED ? "update requested" : "update";
}

export interface Answer {
  recv: Uint8Array;
  /** NewSessionTicket messages received and ignored. */
  sessionTickets: number;
}

export async function readAnswer(
  incoming: IncomingRecords,
  suite: CipherSuite,
  serverApplicationSecret: Uint8Array,
  epochs: EpochWriter,
  writer: RecordWriter,
  limits: AnswerLimits,
): Promise<Answer> {
  const server = new ServerSide(suite, serverApplicationSecret);
  const assembler = new HandshakeAssembler();
  const answer = new GrowingBytes();
  let received = 0;
  let sessionTickets = 0;
  const beforeAnswer = () => received === 0 && epochs.keyUpdates > 0;
  for (;;) {
    const record = await incoming.next().catch((error: unknown) => {
      if (beforeAnswer() && error instanceof AppError && error.code !== "target_timeout") throw keyUpdateRefused("broke the connection");
      throw error;
    });
    if (!record) {
      if (beforeAnswer()) throw keyUpdateRefused(incoming.failed ? "broke the connection" : "closed the connection");
      break;
    }
    if (record.type === ContentType.alert) throw new AppError("target_request_failed", `the target sent a TLS ${alertName(record.fragment)} in clear after the handshake`);
    if (record.type !== ContentType.applicationData) throw malformed(`the server sent a clear record of type ${record.type} after the handshake`);
    const opened = server.opener.tryOpen(record);
    // The server's key opens every record it sent: one that fails was changed between the target and the client.
    if (!opened) throw new AppError("target_request_failed", "a TLS record of the target's answer failed its integrity check: it was changed on its way");
    const { type, content } = opened;
    if (type === ContentType.alert) {
      if (!isCloseNotify(content)) {
        if (beforeAnswer()) throw keyUpdateRefused(`answered with TLS ${alertName(content)}`);
        throw new AppError("target_request_failed", `the target ended the connection with TLS ${alertName(content)}`);
      }
      if (beforeAnswer()) throw keyUpdateRefused("closed the connection (close_notify)");
      break;
    }
    if (type === ContentType.handshake) {
      assembler.push(content);
      for (let message = assembler.next(); message; message = assembler.next()) {
        const handled = postHandshake(message, assembler, server);
        if (handled === "ticket") sessionTickets++;
        if (handled === "update requested") {
          epochs.keyUpdate(epochs.revealed);
          writer.flush();
        }
      }
      continue;
    }
    if (type !== ContentType.applicationData) throw malformed(`the server sent protected content of type ${type}`);
    received += content.length;
    if (received > limits.maxRecvBytes) throw new AppError("response_too_large", `the answer exceeds ${limits.maxRecvBytes} bytes`);
    answer.append(content);
    if (limits.answerComplete?.(answer.view())) break;
  }
  return { recv: answer.view().slice(), sessionTickets };
}
