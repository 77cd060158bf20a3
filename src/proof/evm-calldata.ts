/**
 * A proof's EVM attestation as contracts/TlsproofVerifier.sol takes it: the `Attestation` tuple (with its claims and
 * recipient), the `revealed` segments and the signature, ABI-ready (0x hex, bigint for uint64), and the functions of
 * the proof's mode. A dapp passes these to its ABI encoder (viem's encodeFunctionData, ethers' Interface) as they
 * are: nobody rebuilds the struct from the docs.
 */
import { bytesToHex } from "@noble/hashes/utils.js";
import type { EvmAttestation, EvmClaim } from "./evm-attestation.ts";
import { evmAttestationOf } from "./evm-attestation.ts";
import type { Proof } from "./format.ts";

export type HexString = `0x${string}`;

const hex = (bytes: Uint8Array): HexString => `0x${bytesToHex(bytes)}`;

/** A Claim struct as an ABI encoder takes it (and a contract call returns it): its commitment as 0x hex. */
export type EvmClaimArgs = Omit<EvmClaim, "commitment"> & { commitment: HexString };

export interface AttestationArgs {
  requestId: HexString;
  serverName: string;
  serverPort: number;
  connectionTime: bigint;
  responseTime: bigint;
  notarizedAt: bigint;
  sentLength: number;
  recvLength: number;
  requestHidden: boolean;
  testTrustAnchor: boolean;
  recipient: HexString;
  claims: EvmClaimArgs[];
}

export interface AttestationCalldata {
  /** The contract's `verify*` functions for this proof's mode: proxy-mode attestations have their own. */
  functions: { verify: string; verifiedRange: string; verifiedClaims: string };
  /** The arguments every one of them takes first, in order: the tuple, `revealed`, the signature. */
  args: readonly [AttestationArgs, HexString, HexString];
}

/** The `Attestation` tuple and `revealed` of an attestation of the current struct; throws TypeError for an older one. */
export function attestationArgs(attestation: EvmAttestation): { tuple: AttestationArgs; revealed: HexString } {
  if (attestation.era !== "current") throw new TypeError("the contract takes attestations of the current struct only (a proof made before claims cannot go on chain)");
  return {
    tuple: {
      requestId: hex(attestation.requestId),
      serverName: attestation.serverName,
      serverPort: attestation.serverPort,
      connectionTime: BigInt(attestation.connectionTime),
      responseTime: BigInt(attestation.responseTime),
      notarizedAt: BigInt(attestation.notarizedAt),
      sentLength: attestation.sentLength,
      recvLength: attestation.recvLength,
      requestHidden: attestation.requestHidden,
      testTrustAnchor: attestation.testTrustAnchor,
      recipient: hex(attestation.recipient),
      claims: attestation.claims.map((claim) => ({ ...claim, commitment: hex(claim.commitment) })),
    },
    revealed: hex(attestation.revealed),
  };
}

/** What a dapp sends the contract for this proof; throws TypeError for a proof with no EVM attestation (a P-256 notary's). */
export function attestationCalldata(proof: Proof): AttestationCalldata {
  if (!proof.body.evm) throw new TypeError("this proof has no EVM attestation (its notary's key is not secp256k1)");
  const { tuple, revealed } = attestationArgs(evmAttestationOf(proof.body));
  const proxy = proof.body.mode === "proxy";
  return {
    functions: proxy
      ? { verify: "verifyProxy", verifiedRange: "verifiedProxyRange", verifiedClaims: "verifiedProxyClaims" }
      : { verify: "verify", verifiedRange: "verifiedRange", verifiedClaims: "verifiedClaims" },
    args: [tuple, revealed, proof.body.evm.signature as HexString],
  };
}
