/**
 * The calls a notary's operator, or anyone holding proof of an equivocation, sends to contracts/NotaryRegistry.sol,
 * as calldata any wallet or tool can send (`cli notary calldata`): `register` (with the stake as the value),
 * `requestExit`, `withdraw`, and `slash` with two proofs whose EVM attestations are one notary's two different
 * statements for one request id.
 */
import { AppError } from "../core/errors.ts";
import { type AbiType, type AbiValue, encodeCall } from "./abi.ts";
import { attestationDigest, evmAttestationOf, recoverAttestationSigner } from "./evm-attestation.ts";
import { attestationArgs } from "./evm-calldata.ts";
import type { Proof } from "./format.ts";

const uint = (bits: number): AbiType => ({ kind: "uint", bits });
const text: AbiType = { kind: "string" };
const bool: AbiType = { kind: "bool" };
const CLAIM: AbiType = { kind: "tuple", components: [uint(8), text, text, text, bool, text, { kind: "fixed", size: 32 }] };
const ATTESTATION: AbiType = {
  kind: "tuple",
  components: [{ kind: "fixed", size: 16 }, text, uint(16), uint(64), uint(64), uint(64), uint(32), uint(32), bool, bool, { kind: "address" }, { kind: "array", item: CLAIM }],
};
/** TlsproofAttestation.Signed: the attestation, its revealed segments, its signature, its mode. */
const SIGNED: AbiType = { kind: "tuple", components: [ATTESTATION, { kind: "bytes" }, { kind: "bytes" }, bool] };

export const registryCalls = ["register", "exit", "withdraw", "slash"] as const;
export type RegistryCall = (typeof registryCalls)[number];

/** A proof's EVM attestation as the Signed tuple's values, in member order. */
function signedValue(proof: Proof): AbiValue[] {
  const { tuple, revealed } = attestationArgs(evmAttestationOf(proof.body));
  const claims = tuple.claims.map((c) => [c.kind, c.subject, c.op, c.operand, c.holds, c.value, c.commitment]);
  const attestation = [
    tuple.requestId, tuple.serverName, tuple.serverPort, tuple.connectionTime, tuple.responseTime, tuple.notarizedAt,
    tuple.sentLength, tuple.recvLength, tuple.requestHidden, tuple.testTrustAnchor, tuple.recipient, claims,
  ];
  return [attestation, revealed, proof.body.evm!.signature, proof.body.mode === "proxy"];
}

/** Why two proofs are not one notary's two different statements for one request id, or null. */
function equivocationProblem(a: Proof, b: Proof): string | null {
  for (const [i, proof] of [a, b].entries()) {
    if (!proof.body.evm) return `proof ${i + 1} has no EVM attestation`;
    if (recoverAttestationSigner(evmAttestationOf(proof.body), proof.body.evm.signature) !== proof.body.evm.address) return `proof ${i + 1}'s EVM attestation is not signed by its address`;
  }
  if (a.body.requestId.toLowerCase() !== b.body.requestId.toLowerCase()) return "the proofs are of two request ids";
  if (a.body.evm!.address !== b.body.evm!.address) return "two notaries signed them";
  const [digestA, digestB] = [attestationDigest(evmAttestationOf(a.body)), attestationDigest(evmAttestationOf(b.body))];
  return digestA.every((byte, i) => byte === digestB[i]) ? "they attest the same statement" : null;
}

/** The calldata of `call`, 0x hex; `slash` takes the two proofs and refuses a pair the registry would refuse. */
export function registryCalldata(call: RegistryCall, proofs: readonly Proof[] = []): string {
  if (call === "register") return encodeCall("register", [], []);
  if (call === "exit") return encodeCall("requestExit", [], []);
  if (call === "withdraw") return encodeCall("withdraw", [], []);
  const [a, b] = proofs;
  if (proofs.length !== 2 || !a || !b) throw new AppError("usage", "slash takes two proofs (--proof twice)");
  const problem = equivocationProblem(a, b);
  if (problem) throw new AppError("proof_mismatch", `not an equivocation: ${problem}`);
  return encodeCall("slash", [SIGNED, SIGNED], [signedValue(a), signedValue(b)]);
}
