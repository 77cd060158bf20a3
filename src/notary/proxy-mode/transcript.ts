/**
 * Proxy mode's verified transcript: the bytes the notary relayed, decrypted and authenticated with the keys the
 * prover reveals (src/tls/verify-session.ts), dated by the relay's own clock (relay-log.ts): `connectionTime` when it
 * carried the server's ServerHello (the certificate chain is checked at that time), `responseTime` when it carried the
 * server's last byte. An attestation asked for too long after the relay ended is refused: a prover must not fetch
 * now and choose later which answers to have signed.
 */
import { AppError } from "../../errors.ts";
import type { RevealedKeys } from "../../tls/verify-session.ts";
import { verifyRelayedSession } from "../../tls/verify-session.ts";
import type { RelayedSession } from "./sessions.ts";
import { connectionEnd, relayTimes } from "./relay-log.ts";
import type { SeenDirection, VerifiedTranscript } from "../verified-transcript.ts";

export interface ProxyVerification {
  /** Node's root certificates, plus the test CA when TLSN_TEST_TRUST_ANCHOR is set: the same set as MPC mode. */
  trustAnchorsPem: readonly string[];
  /** How long after the relay ended an attestation may be asked for. */
  attestationWindowMs: number;
}

const wholeDirection = (bytes: Uint8Array): SeenDirection => ({ length: bytes.length, bytes, seen: bytes.length > 0 ? [{ start: 0, end: bytes.length }] : [] });

/** `askedAt`: when the attestation was asked for, ms since the epoch. */
export function proxyTranscript(relayed: RelayedSession, keys: RevealedKeys, options: ProxyVerification, askedAt: number): VerifiedTranscript {
  const times = relayTimes(relayed.events);
  if (!times) throw new AppError("transcript_invalid", "the target sent nothing through the relay");
  const lateMs = askedAt - times.endedAt;
  if (lateMs > options.attestationWindowMs) {
    throw new AppError(
      "attestation_late",
      `the attestation was asked for ${(lateMs / 1000).toFixed(1)} s after the relay ended; this notary signs only within ${options.attestationWindowMs / 1000} s of it`,
    );
  }
  const verified = verifyRelayedSession(relayed.bytes, keys, {
    serverName: relayed.serverName,
    trustAnchorsPem: options.trustAnchorsPem,
    now: new Date(times.firstByteAt),
  });
  return {
    mode: "proxy",
    serverName: verified.serverName,
    serverPort: relayed.port,
    tlsVersion: verified.tlsVersion,
    connectionTime: verified.connectionTime,
    responseTime: Math.floor(times.lastByteAt / 1000),
    sent: verified.sent ? wholeDirection(verified.sent) : { length: verified.sentLength, bytes: null, seen: [] },
    recv: wholeDirection(verified.recv),
    hiddenBy: "notary",
    connectionEnd: connectionEnd(relayed.events, verified.serverRecords, verified.clientRecords),
    alpn: verified.alpn,
  };
}
