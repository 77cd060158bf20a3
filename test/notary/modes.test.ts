/**
 * The notary's seam for modes: a mode registered from outside is offered by the notaries started afterwards (made
 * with their context) until it is forgotten, and the modes of one notary are found by name and counted together.
 */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/base/log.ts";
import { type NotaryMode, type NotaryModeContext, NotaryModes, registerNotaryMode, registeredNotaryModes } from "../../src/notary/modes.ts";
import { modeFacts } from "../../src/proof/modes.ts";

const facts = (name: string) => ({ name, summary: `${name}: a test mode`, notaryDials: false, mayHideRequest: false, notarySeesAnswer: false, evmType: "Attestation" });

/** A mode whose sessions are a number the test sets; only what NotaryModes reads is real. */
const modeNamed = (name: string, active: number) => ({ facts: facts(name), active: () => active }) as unknown as NotaryMode;

describe("registered modes", () => {
  test("a registered mode is made for each notary with its context, known to its verifier, until forgotten", () => {
    const made: NotaryModeContext[] = [];
    const context: NotaryModeContext = { log: createLogger({ level: "error" }), testTrustAnchor: true };
    const forget = registerNotaryMode({ facts: facts("seam-test"), create: (given) => (made.push(given), modeNamed("seam-test", 0)) });
    try {
      expect(registeredNotaryModes(context).map((mode) => mode.facts.name)).toEqual(["seam-test"]);
      expect(made).toEqual([context]);
      expect(modeFacts("seam-test")?.summary).toBe("seam-test: a test mode");
      expect(() => registerNotaryMode({ facts: facts("seam-test"), create: () => modeNamed("seam-test", 0) })).toThrow(
        "a notary backend for mode seam-test is registered already",
      );
    } finally {
      forget();
    }
    expect(registeredNotaryModes(context)).toEqual([]);
    expect(modeFacts("seam-test")).toBeUndefined();
  });
});

describe("one notary's modes", () => {
  test("found by name, listed, and their sessions counted together", () => {
    const mpc = modeNamed("mpc", 2);
    const proxy = modeNamed("proxy", 3);
    const modes = new NotaryModes([mpc, proxy]);
    expect(modes.get("proxy")).toBe(proxy);
    expect(modes.get("other")).toBeUndefined();
    expect(modes.names()).toEqual(["mpc", "proxy"]);
    expect(modes.all()).toEqual([mpc, proxy]);
    expect(modes.active()).toBe(5);
    expect(new NotaryModes([]).active()).toBe(0);
  });
});
