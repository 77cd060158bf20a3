/**
 * How a verifier reads proofs made by earlier releases of tlsproof/1, in one place: each rule names what such a
 * proof lacks and how it is read. A proof made before proxy mode names no mode; one made before the notary checked
 * the answer has no `request`, `responseTime` or `responseFraming` and was attested over the first EIP-712 struct;
 * one made before claims has no `claims` and its struct has no recipient.
 *
 * When they go: with a new proof version (versions.ts) that no longer reads tlsproof/1. Until then every verifier
 * keeps them: a proof signed once stays valid for as long as its reader trusts its notary's key.
 */
import type { ProofBody } from "./format.ts";

/** The mode of a proof body that names none: proofs made before proxy mode are MPC proofs. */
const MODE_BEFORE_MODES = "mpc";

/** A proof body's mode, as a verifier reads it: a body that names none is an MPC proof. */
export const proofModeOf = (body: { mode?: string }): string => body.mode ?? MODE_BEFORE_MODES;

/** True when the notary checked the answer and recorded the exchange's times: a proof's `request` says so. */
export const isCheckedBody = (body: Pick<ProofBody, "request">): boolean => body.request !== undefined;

/**
 * Which EIP-712 struct a proof was signed over: the current one; one made before claims (no `claims` in the body);
 * one made before `request` was attested (`legacy`). Only the current one goes on chain.
 */
export type StructEra = "current" | "pre-claims" | "legacy";

/** The struct's era for a body. */
export const eraOf = (body: Pick<ProofBody, "request" | "claims">): StructEra =>
  !isCheckedBody(body) ? "legacy" : body.claims === undefined ? "pre-claims" : "current";
