/**
 * TLS 1.2 with the master secret revealed (the request revealed whole): the notary derives every key itself
 * (key-schedule.ts, keyBlock12), reads the session with them (verify-tls12.ts), and checks both Finished messages
 * (RFC 5246 §7.4.9): verify_data = PRF(master, "client finished" / "server finished", Hash(handshake messages
 * before it)), 12 bytes; the server's covers the client's Finished and any NewSessionTicket. The keys are then
 * bound to this handshake, not only to the records' tags: a master secret from another handshake whose keys
 * happened to open the records, or a handshake changed in clear, is refused.
 */
import type { KeyObject } from "node:crypto";
import { sameBytes } from "../base/bytes.ts";
import { AppError } from "../core/errors.ts";
import { digest, keyBlock12, prf12 } from "./key-schedule.ts";
import type { SessionData, SessionStart } from "./session-start.ts";
import { verifyTls12 } from "./verify-tls12.ts";

const VERIFY_DATA_LENGTH = 12;
const HANDSHAKE_HEADER = 4;
const MASTER_SECRET_LENGTH = 48;

export function verifyTls12MasterSecret(start: SessionStart, masterSecret: Uint8Array, checkChain: (chainDer: Uint8Array[]) => KeyObject): SessionData {
  if (masterSecret.length !== MASTER_SECRET_LENGTH) throw new AppError("transcript_invalid", `the revealed master secret has ${masterSecret.length} bytes; TLS 1.2 has ${MASTER_SECRET_LENGTH}`);
  const { suite } = start;
  const keys = keyBlock12(suite, masterSecret, start.clientHello.random, start.serverHello.random);
  const { handshake, ...data } = verifyTls12(start, keys, checkChain);
  const { clientFinished, serverFinished } = handshake;
  if (!clientFinished || !serverFinished) throw new AppError("internal", "a Finished message was not opened though its key was derived");
  const beforeClientFinished = [...start.transcript, ...handshake.serverFlight, ...handshake.clientFlight];
  const expected = (label: string, messages: Uint8Array[]) => prf12(suite.hash, masterSecret, label, digest(suite.hash, ...messages), VERIFY_DATA_LENGTH);
  if (!sameBytes(clientFinished.subarray(HANDSHAKE_HEADER), expected("client finished", beforeClientFinished))) {
    throw new AppError("transcript_invalid", "the client's Finished does not match the revealed master secret and the handshake");
  }
  if (!sameBytes(serverFinished.subarray(HANDSHAKE_HEADER), expected("server finished", [...beforeClientFinished, clientFinished, ...handshake.tickets]))) {
    throw new AppError("transcript_invalid", "the server's Finished does not match the revealed master secret and the handshake");
  }
  return data;
}
