/**
 * The proof modes a prover offers, every one made the same way: a backend (`ProvingModeBackend`) whose `create` gets the
 * prover's context. The built-in backends come first (their factories take what only they use: MPC's warm pool,
 * proxy mode's places), then the further ones given to the prover server as an option. `/proxy` looks a call's mode
 * up by its name.
 */
import type { TargetPolicy } from "../../core/target-policy.ts";
import type { Logger } from "../../base/log.ts";
import type { ModeFacts } from "../../proof/modes.ts";
import type { NotaryClient } from "../notary/client.ts";
import type { ModeHeaders, ProvingMode } from "./mode.ts";

/** What a prover gives every mode's backend when it starts. */
export interface ProvingContext {
  /** The prover's notaries, one client for every mode (several notaries: the ones that offer the mode). */
  notary: NotaryClient;
  /** The targets the prover may dial (PROVER_ALLOWED_HOSTS, ...). */
  policy: TargetPolicy;
  /** The roots a target's certificate chain must lead to: the notary's set. */
  trustAnchorsPem: readonly string[];
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  log: Logger;
}

/** A mode's backend: its facts, and how its prover side is made when a prover starts. */
export interface ProvingModeBackend {
  facts: ModeFacts;
  create(context: ProvingContext): ProvingMode;
}

/** The modes one prover runs, each made from its backend with the prover's context, in the backends' order. */
export class ProvingModes {
  private readonly byName = new Map<string, ProvingMode>();
  /** Read on every /proxy call: listed once. */
  private readonly offered: { mode: string; headers: ModeHeaders }[];

  constructor(backends: readonly ProvingModeBackend[], context: ProvingContext) {
    for (const backend of backends) {
      if (this.byName.has(backend.facts.name)) throw new Error(`the prover offers a mode named ${backend.facts.name} already`);
      this.byName.set(backend.facts.name, backend.create(context));
    }
    this.offered = [...this.byName].flatMap(([mode, { headers }]) => (headers ? [{ mode, headers }] : []));
  }

  get(name: string): ProvingMode | undefined {
    return this.byName.get(name);
  }

  /** The modes' own `/proxy` headers, by mode (those that have any). */
  offeredHeaders(): readonly { mode: string; headers: ModeHeaders }[] {
    return this.offered;
  }

  /** Every mode it offers, the built-in ones first. */
  names(): string[] {
    return [...this.byName.keys()];
  }
}
