/**
 * What a prover accepts from one notary before it stores or delivers anything: proofs that verify against a
 * key it trusts, of the request it asked about, made in the session's mode. The trusted keys are the pinned
 * ones (PROVER_NOTARY_KEYS; the embedded notary's own key), or else the key the notary announced at first
 * contact: a notary that later names another key (restarted with a new key, or another server at its address)
 * is refused, not trusted, until an operator pins its key or restarts the prover.
 */
import { AppError } from "../errors.ts";
import type { Proof, ProofMode } from "../proof/format.ts";
import { decodePublicKeyPem, type PublicKey, publicKeyFingerprint, samePublicKey } from "../proof/keys.ts";
import { verifyProof } from "../proof/verify.ts";

export interface NotaryTrust {
  /** Checks the key a notary's /info names; throws `notary_untrusted` for a key this prover does not trust. */
  checkAnnounced(publicKeyPem: string): void;
  /** The keys this notary's proofs may be signed with; empty before first contact when nothing is pinned. */
  keys(): readonly PublicKey[];
}

const untrusted = (reason: string) => new AppError("notary_untrusted", `the notary is not trusted: ${reason}`);

export function notaryTrust(pinned: readonly PublicKey[]): NotaryTrust {
  let announced: PublicKey | undefined;
  return {
    checkAnnounced(publicKeyPem) {
      let key: PublicKey;
      try {
        key = decodePublicKeyPem(publicKeyPem);
      } catch {
        throw untrusted("its announced public key is not a valid key");
      }
      const fingerprint = publicKeyFingerprint(key);
      if (pinned.length > 0) {
        if (!pinned.some((trusted) => samePublicKey(trusted, key))) throw untrusted(`its key ${fingerprint} is not a pinned one (PROVER_NOTARY_KEYS)`);
        return;
      }
      if (!announced) announced = key;
      else if (!samePublicKey(announced, key)) {
        throw untrusted(`its key changed from ${publicKeyFingerprint(announced)} to ${fingerprint} (pin keys with PROVER_NOTARY_KEYS, or restart the prover to accept it)`);
      }
    },
    keys: () => (pinned.length > 0 ? pinned : announced ? [announced] : []),
  };
}

/** The notary's answer as a proof, once it verifies against `keys` and is of this request, in this mode. */
export function checkNotaryAnswer(answer: unknown, keys: readonly PublicKey[], expected: { requestId: string; mode: ProofMode }): Proof {
  if (keys.length === 0) throw untrusted("its key is not known yet");
  try {
    verifyProof(answer, keys, { requestId: expected.requestId });
  } catch (error) {
    throw untrusted(`its answer was refused: ${(error as Error).message}`);
  }
  const proof = answer as Proof;
  const mode = proof.body.mode ?? "mpc";
  if (mode !== expected.mode) throw untrusted(`its proof is of mode "${mode}", the session's is "${expected.mode}"`);
  return proof;
}
