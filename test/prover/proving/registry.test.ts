import { expect, test } from "bun:test";
import { createLogger } from "../../../src/base/log.ts";
import type { NotaryClient } from "../../../src/prover/notary/client.ts";
import type { ProvingMode } from "../../../src/prover/proving/mode.ts";
import { type ProvingContext, ProvingModes } from "../../../src/prover/proving/registry.ts";

const facts = (name: string) => ({ name, summary: `${name}: a test mode`, notaryDials: false, mayHideRequest: false, notarySeesAnswer: false, evmType: "Attestation" });
/** A mode whose only real part is its facts: what ProvingModes reads. */
const modeNamed = (name: string) => ({ facts: facts(name) }) as unknown as ProvingMode;
const context: ProvingContext = {
  notary: {} as NotaryClient,
  policy: { allowPrivateTargets: false, resolve: new Map(), allowedHosts: [], allowedPorts: [] },
  trustAnchorsPem: [],
  connectTimeoutMs: 1_000,
  responseTimeoutMs: 1_000,
  log: createLogger({ level: "error" }),
};

/** A backend that records the context it was made with. */
function backendNamed(name: string, made: ProvingContext[] = []) {
  return { facts: facts(name), create: (given: ProvingContext) => (made.push(given), modeNamed(name)) };
}

test("one prover's modes: every backend made with the prover's context, in order, found by name", () => {
  const made: ProvingContext[] = [];
  const modes = new ProvingModes([backendNamed("mpc", made), backendNamed("proxy", made), backendNamed("further-test", made)], context);
  expect(modes.names()).toEqual(["mpc", "proxy", "further-test"]);
  expect(modes.get("further-test")?.facts.name).toBe("further-test");
  expect(modes.get("other")).toBeUndefined();
  expect(made).toEqual([context, context, context]);
});

test("a further mode named as one the prover offers already is refused", () => {
  expect(() => new ProvingModes([backendNamed("mpc"), backendNamed("proxy"), backendNamed("proxy")], context)).toThrow("the prover offers a mode named proxy already");
});
