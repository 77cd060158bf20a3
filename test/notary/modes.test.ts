/** The notary's seam for modes: the modes of one notary are found by name and counted together. */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/base/log.ts";
import { type NotaryMode, type NotaryModeBackend, type NotaryModeContext, NotaryModes } from "../../src/notary/modes.ts";

const facts = (name: string) => ({ name, summary: `${name}: a test mode`, notaryDials: false, mayHideRequest: false, notarySeesAnswer: false, evmType: "Attestation" });

/** A mode whose sessions are a number the test sets; only what NotaryModes reads is real. */
const modeNamed = (name: string, active: number) => ({ facts: facts(name), active: () => active }) as unknown as NotaryMode;
/** A backend making that mode, recording the context it was made with. */
const backendOf = (mode: NotaryMode, made: NotaryModeContext[] = []): NotaryModeBackend => ({ facts: mode.facts, create: (context) => (made.push(context), mode) });
const context: NotaryModeContext = { log: createLogger({ level: "error" }), testTrustAnchor: false };

describe("one notary's modes", () => {
  test("each made from its backend with the notary's context; found by name, listed, and their sessions counted together", () => {
    const mpc = modeNamed("mpc", 2);
    const proxy = modeNamed("proxy", 3);
    const made: NotaryModeContext[] = [];
    const modes = new NotaryModes([backendOf(mpc, made), backendOf(proxy, made)], context);
    expect(made).toEqual([context, context]);
    expect(modes.get("proxy")).toBe(proxy);
    expect(modes.get("other")).toBeUndefined();
    expect(modes.names()).toEqual(["mpc", "proxy"]);
    expect(modes.all()).toEqual([mpc, proxy]);
    expect(modes.active()).toBe(5);
    expect(new NotaryModes([], context).active()).toBe(0);
  });

  test("a further mode named as one the notary offers already is refused (it would take the built-in one's place)", () => {
    expect(() => new NotaryModes([backendOf(modeNamed("mpc", 0)), backendOf(modeNamed("proxy", 0)), backendOf(modeNamed("proxy", 0))], context)).toThrow(
      "the notary offers a mode named proxy already",
    );
  });
});
