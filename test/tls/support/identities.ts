import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TMP_ROOT } from "../../support/env.ts";
import { type ServerIdentity, TARGET_HOST, type TlsFixture, makeTlsFixture } from "../../support/tls-fixture.ts";

/** The test CA with an ECDSA (P-256) leaf for TARGET_HOST, and an RSA-2048 leaf for it from the same CA (usable for RSA key exchange too, which the verifier must refuse). */
export interface VerifyIdentities {
  fixture: TlsFixture;
  ecdsa: ServerIdentity;
  rsa: ServerIdentity;
}

function openssl(args: string[], cwd: string): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd, stderr: "pipe", stdout: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
}

export function verifyIdentities(): VerifyIdentities {
  const fixture = makeTlsFixture(join(TMP_ROOT, "tls-verify"));
  const dir = fixture.dir;
  if (!existsSync(join(dir, "rsa-chain.pem"))) {
    writeFileSync(
      join(dir, "rsa.cnf"),
      ["basicConstraints = critical,CA:false", "keyUsage = critical,digitalSignature,keyEncipherment", "extendedKeyUsage = serverAuth", `subjectAltName = DNS:${TARGET_HOST}`].join("\n"),
    );
    openssl(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-subj", `/CN=${TARGET_HOST}`, "-out", "rsa.csr"], dir);
    openssl(["x509", "-req", "-in", "rsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "825", "-sha256", "-extfile", "rsa.cnf", "-out", "rsa.pem"], dir);
    writeFileSync(join(dir, "rsa-chain.pem"), readFileSync(join(dir, "rsa.pem"), "utf8") + fixture.caPem);
  }
  return {
    fixture,
    ecdsa: { leafKeyPem: fixture.leafKeyPem, chainPem: fixture.chainPem },
    rsa: { leafKeyPem: readFileSync(join(dir, "rsa.key"), "utf8"), chainPem: readFileSync(join(dir, "rsa-chain.pem"), "utf8") },
  };
}
