/**
 * What a notary knows of one exchange once its mode verified it, whatever the mode: the one input of the proof-body
 * builder (attest.ts), which each mode's NotaryMode.verify returns (modes.ts). MPC mode (mpc/transcript.ts) gets it
 * from its Verifier; proxy mode (proxy-mode/transcript.ts) from the bytes it relayed, decrypted with the prover's keys.
 */
import type { ByteRange } from "../core/transcript.ts";
import type { ConnectionEnd } from "../http1/answer-rule.ts";
import type { SeenBytes } from "../http1/strict-message.ts";
import type { ProofBody, ProofMode } from "../proof/format.ts";
import type { RequestRuleOptions } from "../proof/request-rule.ts";

export interface SeenDirection {
  /** The direction's whole length, seen or not. */
  length: number;
  /** Its bytes, 0 where not seen; null when none was seen (a hidden request). */
  bytes: Uint8Array | null;
  /** What the notary saw (decrypted, or verified), sorted and merged. */
  seen: ByteRange[];
}

export interface VerifiedTranscript {
  mode: ProofMode;
  /** The name the certificate chain was checked for. */
  serverName: string;
  /** The port the notary dialled; undefined when it dialled none (MPC mode). */
  serverPort?: number;
  tlsVersion: ProofBody["tlsVersion"];
  /** When the exchange began and ended as the notary observed it, seconds since the epoch. */
  connectionTime: number;
  responseTime: number;
  sent: SeenDirection;
  recv: SeenDirection;
  /**
   * Who keeps hidden bytes out of the proof: the prover, which never showed them to the notary (MPC mode), or the
   * notary, which saw everything and leaves out what the prover declared hidden (proxy mode).
   */
  hiddenBy: "prover" | "notary";
  /** Whether the server ended the connection of its own accord, as far as the notary saw. */
  connectionEnd: ConnectionEnd;
  /** The application protocol the server chose (null: none); undefined when the notary cannot see it (MPC mode). */
  alpn?: string | null;
  /**
   * Set by a mode that holds a revealed request to the request rule (src/proof/request-rule.ts: the request line and
   * Host revealed whole, hidden spans only inside header or body values whose names are revealed, each at most this
   * long); otherwise a revealed request keeps requestHostProblem's rule (src/proof/check.ts) only.
   */
  requestRule?: RequestRuleOptions;
}

/** A direction as the HTTP rules read it: what was not seen is 0 and unseen. */
export function seenBytes(direction: SeenDirection): SeenBytes {
  const bytes = direction.bytes ?? new Uint8Array(0);
  const { seen } = direction;
  return { bytes, isSeen: (range) => range.end <= range.start || seen.some((s) => s.start <= range.start && range.end <= s.end) };
}
