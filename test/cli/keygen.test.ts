import { describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readPrivateKeyFile, readPublicKeyFile, samePublicKey, decodePublicKeyPem } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { runCommandModule, sampleBody, tempDir } from "../proof/fixtures.ts";

const keygen = (...args: string[]) => runCommandModule("src/cli/keygen.ts", args);

function opensslPubout(keyPath: string): string {
  const result = Bun.spawnSync(["/usr/bin/openssl", "pkey", "-in", keyPath, "-pubout"], { stderr: "pipe" });
  expect(result.exitCode).toBe(0);
  return result.stdout.toString();
}

describe("cli notary keygen", () => {
  test("writes notary.key (0600, PKCS#8) and notary.pub into a new folder, readable by openssl", async () => {
    const out = join(tempDir(), "nested", "keys");
    const { exitCode, stdout, stderr } = await keygen("--out", out);
    expect(stderr).toBe("");
    expect(exitCode).toBe(0);
    expect(stdout).toContain(`wrote ${join(out, "notary.key")} (private, mode 0600) and ${join(out, "notary.pub")}`);
    expect(stdout).toMatch(/notary key sha256:[0-9a-f]{64} \(secp256k1\)/);
    expect(statSync(join(out, "notary.key")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(out, "notary.key"), "utf8")).toStartWith("-----BEGIN PRIVATE KEY-----\n");
    const pub = readFileSync(join(out, "notary.pub"), "utf8");
    expect(pub).toStartWith("-----BEGIN PUBLIC KEY-----\n");
    expect(opensslPubout(join(out, "notary.key"))).toBe(pub);
  });

  test("--algorithm secp256r1 makes a P-256 key", async () => {
    const out = tempDir();
    expect((await keygen("--out", out, "--algorithm", "secp256r1")).exitCode).toBe(0);
    const text = Bun.spawnSync(["/usr/bin/openssl", "pkey", "-in", join(out, "notary.key"), "-noout", "-text"]).stdout.toString();
    expect(text).toContain("ASN1 OID: prime256v1");
    expect(readPrivateKeyFile(join(out, "notary.key")).algorithm).toBe("secp256r1");
  });

  test("the written pair signs proofs that verify against notary.pub", async () => {
    const out = tempDir();
    await keygen("--out", out);
    const key = readPrivateKeyFile(join(out, "notary.key"));
    const pinned = readPublicKeyFile(join(out, "notary.pub"));
    expect(samePublicKey(decodePublicKeyPem(key.publicKeyPem), pinned)).toBe(true);
    const proofPath = join(out, "proof.json");
    writeFileSync(proofPath, JSON.stringify(signProof(sampleBody(key), key)));
    const verified = await runCommandModule("src/cli/verify.ts", ["--notary-pub-key", join(out, "notary.pub"), "--proof", proofPath]);
    expect(verified.exitCode).toBe(0);
  });

  test("refuses to overwrite without --force, leaving the files as they were", async () => {
    const out = tempDir();
    await keygen("--out", out);
    const before = readFileSync(join(out, "notary.key"), "utf8");
    const { exitCode, stderr } = await keygen("--out", out);
    expect(exitCode).toBe(2);
    expect(stderr.trimEnd()).toBe(
      `error: refusing to overwrite ${join(out, "notary.key")} and ${join(out, "notary.pub")} (use --force to replace)`,
    );
    expect(readFileSync(join(out, "notary.key"), "utf8")).toBe(before);
  });

  test("refuses when only one of the two files exists", async () => {
    const out = tempDir();
    writeFileSync(join(out, "notary.pub"), "keep me");
    const { exitCode, stderr } = await keygen("--out", out);
    expect(exitCode).toBe(2);
    expect(stderr.trimEnd()).toBe(`error: refusing to overwrite ${join(out, "notary.pub")} (use --force to replace)`);
    expect(readFileSync(join(out, "notary.pub"), "utf8")).toBe("keep me");
  });

  test("--force replaces both with a new pair, the key still 0600", async () => {
    const out = tempDir();
    await keygen("--out", out);
    const before = readFileSync(join(out, "notary.pub"), "utf8");
    expect((await keygen("--out", out, "--force")).exitCode).toBe(0);
    const after = readFileSync(join(out, "notary.pub"), "utf8");
    expect(after).not.toBe(before);
    expect(opensslPubout(join(out, "notary.key"))).toBe(after);
    expect(statSync(join(out, "notary.key")).mode & 0o777).toBe(0o600);
  });

  test("usage errors exit 2: missing --out, unknown algorithm", async () => {
    const noOut = await keygen();
    expect(noOut.exitCode).toBe(2);
    expect(noOut.stderr).toContain("error: Missing required argument: --out");
    const badAlgorithm = await keygen("--out", tempDir(), "--algorithm", "ed25519");
    expect(badAlgorithm.exitCode).toBe(2);
    expect(badAlgorithm.stderr).toContain("Invalid value for argument");
  });

  test("an --out that cannot be created is one error line, exit 2", async () => {
    const file = join(tempDir(), "a-file");
    writeFileSync(file, "");
    const { exitCode, stderr } = await keygen("--out", join(file, "keys"));
    expect(exitCode).toBe(2);
    expect(stderr.trimEnd()).toMatch(new RegExp(`^error: cannot create ${join(file, "keys")}: ENOTDIR`));
  });
});
