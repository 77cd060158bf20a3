/**
 * Proxy mode's verified transcript: the bytes the notary relayed, decrypted and authenticated with the keys the
 * prover reveals (src/tls/verify-session.ts), dated by the relay's own clock (relay-log.ts): `connectionTime` when it
 * carried the server's ServerHello (the certificate chain is checked at that time), `responseTime` when it carried the
 * server's last byte. An attestation asked for too long after the relay ended is refused: a prover must not fetch
 * now and choose later which answers to have signed.
 * The request as the notary itself read it: whole (TLS 1.3 traffic secrets, a TLS 1.2 master secret), less the hidden
 * epochs whose lengths alone it saw (TLS 1.3 epochs: never the spans the prover declares), or not at all. A revealed
 * request is held to the request rule (src/proof/request-rule.ts) with this notary's bound on a hidden span.
 */
import { AppError } from "../../core/errors.ts";
import { complementRanges } from "../../core/ranges.ts";
import { type RevealedKeys, type VerifiedSession, verifyRelayedSession } from "../../tls/verify-session.ts";
import type { RelayedSession } from "./sessions.ts";
import { connectionEnd, relayTimes } from "./relay-log.ts";
import type { SeenDirection, VerifiedTranscript } from "../verified-transcript.ts";

export interface ProxyVerification {
  /** Node's root certificates, plus the test CA when TLSN_TEST_TRUST_ANCHOR is set: the same set as MPC mode. */
  trustAnchorsPem: readonly string[];
  /** How long after the relay ended an attestation may be asked for. */
  attestationWindowMs: number;
  /** Most bytes of one hidden span in a revealed request. */
  maxHiddenSpanBytes: number;
}

const wholeDirection = (bytes: Uint8Array): SeenDirection => ({ length: bytes.length, bytes, seen: bytes.length > 0 ? [{ start: 0, end: bytes.length }] : [] });

/** The request as the notary read it: whole, less the hidden epochs it saw the lengths of, or not at all. */
function sentDirection(verified: VerifiedSession): SeenDirection {
  if (verified.sent) return wholeDirection(verified.sent);
  if (verified.sentPartly) {
    const { bytes, hidden } = verified.sentPartly;
    return { length: bytes.length, bytes, seen: complementRanges(bytes.length, hidden) };
  }
  return { length: verified.sentLength, bytes: null, seen: [] };
}

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
    sent: sentDirection(verified),
    recv: wholeDirection(verified.recv),
    hiddenBy: "notary",
    connectionEnd: connectionEnd(relayed.events, verified.serverRecords, verified.clientRecords),
    alpn: verified.alpn,
    // A request written in epochs: the notary read its hidden epochs' lengths only. Seen whole, its own parse decides.
    ...(verified.sentPartly && verified.sentPartly.hidden.length > 0 ? { requestRule: { maxHiddenSpanBytes: options.maxHiddenSpanBytes } } : {}),
  };
}
