/**
 * The proof wire format, version "tlsproof/1". Written down in docs/proof-format.md.
 *
 * A proof is JSON: `{ version, body, signature }`. The notary signs `body` only, over the canonical
 * encoding in canonical.ts. Everything a verifier needs is inside: no network, no wasm.
 *
 * Hidden bytes are absent: each direction lists only the ranges the prover revealed, with their bytes.
 */

import type { ByteRange, RedactionSpan } from "../core/transcript.ts";

export const PROOF_VERSION = "tlsproof/1";

/** How the notary took part: "mpc" (MPC-TLS, it saw nothing in clear) or "proxy" (it relayed the connection). */
export type ProofMode = "mpc" | "proxy";
export type SignatureAlgorithm = "secp256k1" | "secp256r1";

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
  /** Absent in proofs made before proxy mode: those are MPC proofs. */
  mode?: ProofMode;
  /** Server name proven by the TLS certificate chain (the notary checked the chain). */
  serverName: string;
  /** TLS connection time, seconds since the Unix epoch, as the MPC session recorded it. */
  connectionTime: number;
  tlsVersion: "TLS1.2" | "TLS1.3";
  /** When the notary signed, milliseconds since the Unix epoch. */
  notarizedAt: number;
  transcript: { sent: TranscriptDirection; recv: TranscriptDirection };
  redactions: DeclaredRedaction[];
  /** True when the session trusted a test CA instead of only the built-in Mozilla roots. */
  testTrustAnchor: boolean;
  /** tlsproof version of the notary that signed. */
  notaryVersion: string;
  /** Made by secp256k1 notaries; absent with a secp256r1 key and in proofs made before EVM attestations. */
  evm?: EvmSignature;
}

export interface Proof {
  version: typeof PROOF_VERSION;
  body: ProofBody;
  /** Signature over canonicalEncoding(body): 64-byte compact r||s (low-s), hex. */
  signature: string;
}
