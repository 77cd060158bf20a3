/** The notary's seam for modes: the modes of one notary are found by name and counted together. */
import { describe, expect, test } from "bun:test";
import { type NotaryMode, NotaryModes } from "../../src/notary/modes.ts";

const facts = (name: string) => ({ name, summary: `${name}: a test mode`, notaryDials: false, mayHideRequest: false, notarySeesAnswer: false, evmType: "Attestation" });

/** A mode whose sessions are a number the test sets; only what NotaryModes reads is real. */
const modeNamed = (name: string, active: number) => ({ facts: facts(name), active: () => active }) as unknown as NotaryMode;

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
