import { mkdirSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A test CA with the subject of the anchor that trust-anchor.ts replaces, and a leaf certificate for
 * TARGET_HOST, made with the real openssl binary. Cached per folder: tests share one CA.
 */
export const TARGET_HOST = "target.tlsproof.test";

export interface TlsFixture {
  dir: string;
  caPath: string;
  caPem: string;
  leafKeyPem: string;
  /** Leaf then CA: the chain a server presents. */
  chainPem: string;
}

function openssl(args: string[], cwd: string): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd, stderr: "pipe", stdout: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
}

export function makeTlsFixture(dir: string): TlsFixture {
  mkdirSync(dir, { recursive: true });
  const caPath = join(dir, "ca.pem");
  if (!existsSync(join(dir, "chain.pem"))) {
    writeFileSync(
      join(dir, "ca.cnf"),
      [
        "[req]", "distinguished_name = dn", "prompt = no", "string_mask = default", "x509_extensions = ext",
        "[dn]", "OU = GlobalSign ECC Root CA - R4", "O = GlobalSign", "CN = GlobalSign",
        "[ext]", "basicConstraints = critical,CA:true", "keyUsage = critical,keyCertSign,cRLSign",
        "subjectKeyIdentifier = hash",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "leaf.cnf"),
      [
        "basicConstraints = critical,CA:false", "keyUsage = critical,digitalSignature",
        "extendedKeyUsage = serverAuth", `subjectAltName = DNS:${TARGET_HOST}`,
      ].join("\n"),
    );
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
    openssl(["req", "-x509", "-new", "-key", "ca.key", "-config", "ca.cnf", "-days", "3650", "-sha256", "-out", "ca.pem"], dir);
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "leaf.key"], dir);
    openssl(["req", "-new", "-key", "leaf.key", "-subj", `/CN=${TARGET_HOST}`, "-out", "leaf.csr"], dir);
    openssl(
      ["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "825",
        "-sha256", "-extfile", "leaf.cnf", "-out", "leaf.pem"],
      dir,
    );
    writeFileSync(join(dir, "chain.pem"), readFileSync(join(dir, "leaf.pem"), "utf8") + readFileSync(caPath, "utf8"));
  }
  return {
    dir,
    caPath,
    caPem: readFileSync(caPath, "utf8"),
    leafKeyPem: readFileSync(join(dir, "leaf.key"), "utf8"),
    chainPem: readFileSync(join(dir, "chain.pem"), "utf8"),
  };
}
