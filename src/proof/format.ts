/**
 * The proof wire format, version "tlsproof/1". Written down in docs/proof-format.md.
 *
 * A proof is JSON: `{ version, body, signature }`. The notary signs `body` only, over the canonical
 * encoding in canonical.ts. Everything a verifier needs is inside: no network, no wasm.
 *
 * Hidden bytes are absent: each direction lists only the ranges the prover revealed, with their bytes.
 */

import type { ByteRange, RedactionSpan } from "../core/transcript.ts";
import type { ResponseFraming } from "../http1/answer-rule.ts";
import type { Claim } from "../claims/claim.ts";

export type { Claim } from "../claims/claim.ts";

export type { ResponseFraming } from "../http1/answer-rule.ts";

export const PROOF_VERSION = "tlsproof/1";

/** How the notary took part: the name of a mode of modes.ts ("mpc", "proxy", or one registered there). */
export type ProofMode = string;
export type SignatureAlgorithm = "secp256k1" | "secp256r1";
/**
 * Whether the notary saw the request: "revealed" (its request line and Host are in the proof, checked), or "hidden"
 * (proxy mode without the request revealed: the notary saw its length only, so the proof says nothing of the method,
 * URL, Host or port the answer answers).
 */
export type RequestVisibility = "revealed" | "hidden";

/** One revealed range of a transcript direction and its bytes (base64). */
export interface RevealedRange extends ByteRange {
  data: string;
}

export interface TranscriptDirection {
  /** Total length of this direction of the TLS transcript, hidden bytes included. */
  length: number;
  /** Revealed ranges, sorted by start, non-overlapping, non-adjacent merged. */
  revealed: RevealedRange[];
}


/** A redaction pattern as declared by the prover, in its public form (a `search:` value never appears). */
export interface DeclaredRedaction {
  pattern: string;
  spans: RedactionSpan[];
  matched: boolean;
}

/** The EVM attestation (src/proof/evm-attestation.ts): an EIP-712 signature a contract checks with ecrecover. */
export interface EvmSignature {
  /** Lower-case 0x Ethereum address of the notary key (secp256k1 only). */
  address: string;
  /** 0x + 65 bytes r ‖ s ‖ v (v = 27 or 28, low s), lower-case hex. */
  signature: string;
}

export interface ProofBody {
  requestId: string;
  notary: {
    /** SPKI PEM of the key that signed this proof. */
    publicKey: string;
    algorithm: SignatureAlgorithm;
    /** True when the notary was the prover's own embedded one (same operator); absent in older proofs. */
    embedded?: boolean;
  };
  /** Absent in proofs made before proxy mode: those are MPC proofs (modes.ts, proofModeOf). */
  mode?: ProofMode;
  /** Server name proven by the TLS certificate chain (the notary checked the chain). */
  serverName: string;
  /** The TCP port the notary dialled (proxy mode); absent in MPC proofs (the notary never dials) and older proofs. */
  serverPort?: number;
  /**
   * Seconds since the Unix epoch. Proxy mode: when the notary's relay carried the server's first byte (its
   * ServerHello); the certificate chain was checked at this time. MPC mode: when the notary's Verifier began the
   * exchange's online phase (docs/proof-format.md, "Times"). Older proofs: the MPC session's setup, or the attestation.
   */
  connectionTime: number;
  /**
   * Seconds since the Unix epoch: proxy mode, when the relay carried the server's last byte; MPC mode, when the
   * notary's Verifier finished. Absent in older proofs; with `request` and `responseFraming`, the fields of a proof
   * whose answer the notary checked to be one complete HTTP/1.1 answer.
   */
  responseTime?: number;
  /** How the answer's body was framed, as the notary checked it (src/http1/answer-rule.ts); absent in older proofs. */
  responseFraming?: ResponseFraming;
  /** Whether the notary saw the request; absent in older proofs (a proxy-mode one with no sent byte revealed hid it). */
  request?: RequestVisibility;
  tlsVersion: "TLS1.2" | "TLS1.3";
  /** When the notary signed, milliseconds since the Unix epoch. */
  notarizedAt: number;
  transcript: { sent: TranscriptDirection; recv: TranscriptDirection };
  redactions: DeclaredRedaction[];
  /** True when the session trusted a test CA instead of only the built-in Mozilla roots. */
  testTrustAnchor: boolean;
  /** tlsproof version of the notary that signed. */
  notaryVersion: string;
  /**
   * What the notary states of the answer beyond its bytes (src/claims/claim.ts), in the order asked; present (maybe
   * empty) in every proof made since claims, which is what tells the EVM attestation's struct (evm-attestation.ts).
   */
  claims?: Claim[];
  /** Lower-case 0x Ethereum address the proof was made for (`T-RECIPIENT`); absent when none was named. */
  recipient?: string;
  /** Made by secp256k1 notaries; absent with a secp256r1 key and in proofs made before EVM attestations. */
  evm?: EvmSignature;
}

export interface Proof {
  version: typeof PROOF_VERSION;
  body: ProofBody;
  /** Signature over canonicalEncoding(version, body): 64-byte compact r||s (low-s), hex. */
  signature: string;
}
