/**
 * What a prover accepts from one notary before it stores or delivers anything: proofs that verify against a
 * key it trusts, of the request it asked about, made in the session's mode. The trusted keys are the pinned
 * ones (PROVER_NOTARY_KEYS; the embedded notary's own key), or else the key the notary announced at first
 * contact: a notary that later names another key (restarted with a new key, or another server at its address)
 * is refused, not trusted, until an operator pins its key or restarts the prover.
 */
import { AppError } from "../../core/errors.ts";
import type { Proof, ProofMode } from "../../proof/format.ts";
import { decodePublicKeyPem, type PublicKey, publicKeyFingerprint, samePublicKey } from "../../proof/keys.ts";
import { proofModeOf } from "../../proof/older-proofs.ts";
import { verifyProof } from "../../proof/verify.ts";

export interface NotaryTrust {
  /** Checks the key a notary's /info names; throws `notary_untrusted` for a key this prover does not trust. */
  checkAnnounced(publicKeyPem: string): void;
  /** The keys this notary's proofs may be signed with; empty before first contact when nothing is pinned. */
  keys(): readonly PublicKey[];
  /** Whether a key announcement was checked yet. */
  contacted(): boolean;
  /** Why the last announced key was refused; undefined while the notary is trusted. */
  refusal(): AppError | undefined;
}

const untrusted = (reason: string) => new AppError("notary_untrusted", `the notary is not trusted: ${reason}`);

/** The key a notary announces, and why it is not trusted when it is not; `announced` is its first key (none pinned). */
function announcementProblem(publicKeyPem: string, pinned: readonly PublicKey[], announced: PublicKey | undefined): { key?: PublicKey; problem?: string } {
  let key: PublicKey;
  try {
    key = decodePublicKeyPem(publicKeyPem);
  } catch {
    return { problem: "its announced public key is not a valid key" };
  }
  const fingerprint = publicKeyFingerprint(key);
  if (pinned.length > 0) {
    return pinned.some((trusted) => samePublicKey(trusted, key)) ? { key } : { key, problem: `its key ${fingerprint} is not a pinned one (PROVER_NOTARY_KEYS)` };
  }
  if (announced && !samePublicKey(announced, key)) {
    return { key, problem: `its key changed from ${publicKeyFingerprint(announced)} to ${fingerprint} (pin keys with PROVER_NOTARY_KEYS, or restart the prover to accept it)` };
  }
  return { key };
}

export function notaryTrust(pinned: readonly PublicKey[]): NotaryTrust {
  let announced: PublicKey | undefined;
  let contacted = false;
  let refusal: AppError | undefined;
  return {
    checkAnnounced(publicKeyPem) {
      const { key, problem } = announcementProblem(publicKeyPem, pinned, announced);
      contacted = true;
      refusal = problem === undefined ? undefined : untrusted(problem);
      if (refusal) throw refusal;
      if (pinned.length === 0 && !announced) announced = key;
    },
    keys: () => (pinned.length > 0 ? pinned : announced ? [announced] : []),
    contacted: () => contacted,
    refusal: () => refusal,
  };
}

/** The notary's answer as a proof, once it verifies against `keys` and is of this request, in this mode. */
export function checkNotaryAnswer(answer: unknown, keys: readonly PublicKey[], expected: { requestId: string; mode: ProofMode }): Proof {
  if (keys.length === 0) throw untrusted("its key is not known yet");
  try {
    // The prover asked for a hidden request itself when it did (proxy mode without T-PROXY-REVEAL), and runs under the
    // same trust anchor as its notary; its clients judge both.
    verifyProof(answer, keys, { requestId: expected.requestId, allowHiddenRequest: true, allowTestTrustAnchor: true });
  } catch (error) {
    throw untrusted(`its answer was refused: ${(error as Error).message}`);
  }
  const proof = answer as Proof;
  const mode = proofModeOf(proof.body);
  if (mode !== expected.mode) throw untrusted(`its proof is of mode "${mode}", the session's is "${expected.mode}"`);
  return proof;
}
