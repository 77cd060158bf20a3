import { describe, expect, test } from "bun:test";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../testkit/env.ts";
import { makeTlsFixture, makeUntrustedIdentities } from "../../testkit/tls-fixture.ts";

/** The test CA under .tmp/ is cached between runs; a stale cache must not fail every TLS test with an odd error. */
describe("the cached TLS fixture", () => {
  test("is reused while valid, and made again when its leaf has expired or another generator made it", () => {
    const dir = join(tempDir("fixture"), "tls");
    const first = makeTlsFixture(dir);
    expect(makeTlsFixture(dir).caPem).toBe(first.caPem);

    // Its leaf replaced by an expired one (from the same CA): a new CA and leaf.
    const { expired } = makeUntrustedIdentities(first);
    copyFileSync(join(dir, "expired-leaf.pem"), join(dir, "leaf.pem"));
    expect(expired.chainPem).toStartWith(readFileSync(join(dir, "leaf.pem"), "utf8"));
    const renewed = makeTlsFixture(dir);
    expect(renewed.caPem).not.toBe(first.caPem);
    expect(makeTlsFixture(dir).caPem).toBe(renewed.caPem);

    // Made by another version of the generator: made again.
    writeFileSync(join(dir, "generator.sha256"), "an older generator");
    const regenerated = makeTlsFixture(dir);
    expect(regenerated.caPem).not.toBe(renewed.caPem);
    expect(regenerated.chainPem).toContain(regenerated.caPem);
  });
});
