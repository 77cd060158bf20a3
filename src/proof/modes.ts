/**
 * The proof modes: how a notary took part in an exchange, and the facts a verifier and a reader need of each, in
 * one table. The verifier's rules (check.ts), the EVM attestation's type (evm-attestation.ts), `cli verify`'s
 * report and the viewer (render.ts) read it, and the prover's and notary's servers.
 *
 * How verifiers learn the modes: the built-in modes are always known; another mode is known to a process once it
 * registered that mode's facts (`registerModeFacts`; a server given a further mode's backend does so while it runs).
 * A proof of a mode the verifier does not know is refused as invalid: `cli verify` accepts the built-in modes only.
 */

import { proofModeOf } from "./older-proofs.ts";

export interface ModeFacts {
  /** As `T-PROOF-MODE` and a proof body's `mode` name it (MODE_NAME). */
  name: string;
  /** What the notary saw, for reports and the viewer: "MPC-TLS: the notary saw nothing in clear". */
  summary: string;
  /** The notary dialled the server itself: its proofs name the port it dialled (`serverPort`), other modes' never do. */
  notaryDials: boolean;
  /** The notary may sign an answer whose request it never saw (`request: "hidden"`); other modes' notaries refuse. */
  mayHideRequest: boolean;
  /**
   * The notary saw the whole answer in clear, what the proof hides included: its claims may judge a value the proof
   * hides (src/claims/). Other modes' notaries judge only what the proof reveals.
   */
  notarySeesAnswer: boolean;
  /** The primary type of its EIP-712 attestation: a contract accepts a mode by asking for that type. */
  evmType: string;
}

/** A mode's name: lower-case letters, digits and dashes, a letter first. */
export const MODE_NAME = /^[a-z][a-z0-9-]{0,31}$/;

/** The modes every build knows: the closed set this product ships, one backend each on both sides. */
export const BUILT_IN_MODES = {
  mpc: {
    name: "mpc",
    summary: "MPC-TLS: the notary saw nothing in clear",
    notaryDials: false,
    mayHideRequest: false,
    notarySeesAnswer: false,
    evmType: "Attestation",
  },
  proxy: {
    name: "proxy",
    summary: "the notary relayed the connection and saw the response in clear; the request only if revealed",
    notaryDials: true,
    mayHideRequest: true,
    notarySeesAnswer: true,
    evmType: "ProxyAttestation",
  },
} as const satisfies Record<string, ModeFacts>;

export type BuiltInMode = keyof typeof BUILT_IN_MODES;

const registered = new Map<string, ModeFacts>();

/**
 * Makes a mode known to this process (its verifier included); returns the call that forgets it again. A built-in
 * mode's name, or a name registered with other facts, is refused.
 */
export function registerModeFacts(facts: ModeFacts): () => void {
  if (!MODE_NAME.test(facts.name)) throw new Error(`a mode's name is lower-case letters, digits and dashes: ${JSON.stringify(facts.name)}`);
  const known = modeFacts(facts.name);
  if (known && known !== facts) throw new Error(`the mode ${facts.name} is known already`);
  registered.set(facts.name, facts);
  return () => {
    if (registered.get(facts.name) === facts) registered.delete(facts.name);
  };
}

/** The facts of a mode this process knows, or undefined. */
export function modeFacts(name: string): ModeFacts | undefined {
  return Object.hasOwn(BUILT_IN_MODES, name) ? BUILT_IN_MODES[name as BuiltInMode] : registered.get(name);
}

/** Every mode this process knows, the built-in ones first. */
export function knownModes(): string[] {
  return [...Object.keys(BUILT_IN_MODES), ...registered.keys()];
}

/** The facts of a proof body's mode; throws for a mode this process does not know (verifyProof refuses those first). */
export function modeFactsOf(body: { mode?: string }): ModeFacts {
  const mode = proofModeOf(body);
  const facts = modeFacts(mode);
  if (!facts) throw new Error(`unknown proof mode ${JSON.stringify(mode)}`);
  return facts;
}

/** Why a mode is not one this process knows, or null. */
export function unknownModeProblem(mode: string): string | null {
  if (modeFacts(mode)) return null;
  return `unknown proof mode ${JSON.stringify(mode)} (this verifier knows ${knownModes().join(", ")})`;
}

/**
 * Makes further modes' facts known while a server offering them runs (its notary signs their attestations, its
 * prover's notary client reads them): the facts not known yet are registered, and the call returned forgets those
 * again. A mode a server makes from a backend must not clash with one known under other facts.
 */
export function knowModeFacts(further: readonly ModeFacts[]): () => void {
  const forgets = further.filter((facts) => modeFacts(facts.name) !== facts).map((facts) => registerModeFacts(facts));
  return () => {
    for (const forget of forgets) forget();
  };
}

/** A mode as a report line says it: its name and what the notary saw. */
export const modeText = (facts: ModeFacts): string => `${facts.name} (${facts.summary})`;
