/**
 * The proof modes a prover offers: the built-in ones, built by the composition root (src/app/prover.ts), and every
 * mode registered here with one call before the prover starts. `/proxy` looks a call's mode up by its name.
 */
import type { TargetPolicy } from "../../core/target-policy.ts";
import type { Logger } from "../../base/log.ts";
import { BUILT_IN_MODES, ModeBackends, type ModeFacts } from "../../proof/modes.ts";
import type { NotaryClient } from "../notary/client.ts";
import type { ProvingMode } from "./mode.ts";

/** What a prover gives a registered mode's backend when it starts. */
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

/** A mode registered from outside the built-in set: its facts, and how its backend is made when a prover starts. */
export interface ProvingModeBackend {
  facts: ModeFacts;
  create(context: ProvingContext): ProvingMode;
}

const registered = new ModeBackends<ProvingModeBackend>("proving");

/**
 * Registers a mode's prover side, and its facts for this process's verifier: provers started afterwards offer it.
 * Returns the call that forgets it again.
 */
export const registerProvingMode = (backend: ProvingModeBackend): (() => void) => registered.register(backend);

/** Whether `name` is a mode this process offers: a built-in one or a registered one. */
export const isProvingMode = (name: string): boolean => Object.hasOwn(BUILT_IN_MODES, name) || registered.has(name);

/** Every mode this process offers, the built-in ones first. */
export const provingModeNames = (): string[] => [...Object.keys(BUILT_IN_MODES), ...registered.names()];

/** The modes one prover runs: its built-in backends, and the registered ones made for it. */
export class ProvingModes {
  private readonly byName: Map<string, ProvingMode>;

  constructor(builtIn: readonly ProvingMode[], context: ProvingContext) {
    const modes = [...builtIn, ...registered.all().map((backend) => backend.create(context))];
    this.byName = new Map(modes.map((mode) => [mode.facts.name, mode]));
  }

  get(name: string): ProvingMode | undefined {
    return this.byName.get(name);
  }
}
