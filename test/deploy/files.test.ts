/** deploy/ ships safe: API keys on, notaries over TLS taking only whitelisted keys. Read by the product's own loaders. */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { loadNotaryConfig } from "../../src/notary/config.ts";
import { loadProverConfig } from "../../src/prover/config.ts";
import { loadWhitelist } from "../../src/notary/whitelist.ts";
import { DEPLOY, readEnvFile } from "./support.ts";

describe("deploy/", () => {
  const proverEnv = readEnvFile(join(DEPLOY, "prover.env"));

  test("the provers require API keys and reach their notaries over TLS with a key", () => {
    // The example's keys are placeholders, which the prover refuses until replaced.
    expect(() => loadProverConfig(proverEnv)).toThrow("replace the example's CHANGE-ME");
    const config = loadProverConfig({ ...proverEnv, PROVER_API_KEYS: "client-key-1", PROVER_NOTARY_API_KEY: "notary-key-1" });
    expect(config.auth.full.length).toBeGreaterThan(0);
    expect(config.notary.urls.length).toBe(2);
    for (const url of config.notary.urls) expect(url).toStartWith("https://");
    expect(config.notary.apiKey).toBeTruthy();
  });

  test.each(["a", "b"])("notary %s serves TLS and takes only the provers' whitelisted key", (name) => {
    const config = loadNotaryConfig(join(DEPLOY, `notary-${name}.yaml`), {});
    expect(config.tls.enabled).toBe(true);
    expect(config.auth.enabled).toBe(true);
    expect([...loadWhitelist(config.auth.whitelistPath).keys()]).toEqual([proverEnv.PROVER_NOTARY_API_KEY!]);
  });

  test.each(["a", "b"])("notary %s relays in proxy mode to public targets on 443 and 8443 only", (name) => {
    const { proxy } = loadNotaryConfig(join(DEPLOY, `notary-${name}.yaml`), {});
    expect(proxy).not.toBeNull();
    expect(proxy!.policy.allowPrivateTargets).toBe(false);
    expect(proxy!.policy.allowedPorts).toEqual([443, 8443]);
    expect(proxy!.policy.resolve.size).toBe(0);
  });
});
