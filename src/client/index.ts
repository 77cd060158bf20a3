/**
 * `tlsproof/client`: prove an HTTPS exchange through a tlsproof prover and verify proofs offline.
 * Web-standard APIs only (fetch, streams, crypto.randomUUID): runs in Bun, Node and browsers.
 */
export { prove, type ProveOptions, type ProveResult, type ProvableMethod } from "./prove.ts";
export { verifyProof, verifyQuorum, type ProofExpectations, type VerifiedProof, type VerifiedQuorum } from "./verify.ts";
export { redact, redactionHeader, type BodyPath, type RedactionPattern, type Redactions } from "./redact.ts";
export { TlsproofError, type TlsproofErrorCode, type ClientErrorCode, type TargetResponse } from "./errors.ts";
export { readSseEvents, type SseEvent } from "./sse.ts";
export type { Proof, ProofMode } from "../proof/format.ts";
export type { Claim, ClaimJson } from "../claims/claim.ts";
export { attestationCalldata, type AttestationCalldata, type AttestationArgs, type EvmClaimArgs } from "../proof/evm-calldata.ts";
