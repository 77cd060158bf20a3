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

test("one prover's modes: the built-in ones, then each further one made with the prover's context, found by name", () => {
  const made: ProvingContext[] = [];
  const further = { facts: facts("further-test"), create: (given: ProvingContext) => (made.push(given), modeNamed("further-test")) };
  const modes = new ProvingModes([modeNamed("mpc"), modeNamed("proxy")], [further], context);
  expect(modes.names()).toEqual(["mpc", "proxy", "further-test"]);
  expect(modes.get("further-test")?.facts.name).toBe("further-test");
  expect(modes.get("other")).toBeUndefined();
  expect(made).toEqual([context]);
});

test("a further mode named as one the prover offers already is refused", () => {
  const clash = { facts: facts("proxy"), create: () => modeNamed("proxy") };
  expect(() => new ProvingModes([modeNamed("mpc"), modeNamed("proxy")], [clash], context)).toThrow("the prover offers a mode named proxy already");
});
