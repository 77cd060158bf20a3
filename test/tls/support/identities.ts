import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TMP_ROOT } from "../../../testkit/env.ts";
import { type ServerIdentity, TARGET_HOST, type TlsFixture, makeTlsFixture, rsaIdentity } from "../../../testkit/tls-fixture.ts";

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
  return { fixture, ecdsa: { leafKeyPem: fixture.leafKeyPem, chainPem: fixture.chainPem }, rsa: rsaIdentity(fixture) };
}

/** Chains that test the verifier's path building, from the same test CA (each presented by a server). */
export interface ChainIdentities {
  /** Leaf for TARGET_HOST, issued by an intermediate CA that the CA issued; chain: leaf, intermediate. */
  viaIntermediate: ServerIdentity;
  /** Leaf for TARGET_HOST issued by a certificate that may sign certificates (key usage) but is no CA (basic constraints). */
  issuedByNonCa: ServerIdentity;
  /** Leaf for TARGET_HOST whose extended key usage is client authentication only. */
  clientAuthOnly: ServerIdentity;
  /** Leaf for TARGET_HOST issued by an intermediate whose path length is 0: allowed. */
  viaPathLengthZero: ServerIdentity;
  /** Leaf for TARGET_HOST issued by an intermediate CA that an intermediate of path length 0 issued: refused. */
  beyondPathLength: ServerIdentity;
}

/** `<name>.pem`/`<name>.key`: a P-256 certificate for `subject` issued by `issuer` with these extensions. */
function issue(dir: string, name: string, issuer: string, subject: string, extensions: string[]): void {
  writeFileSync(join(dir, `${name}.cnf`), extensions.join("\n"));
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
  openssl(["req", "-new", "-key", `${name}.key`, "-subj", subject, "-out", `${name}.csr`], dir);
  openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", `${issuer}.pem`, "-CAkey", `${issuer}.key`, "-CAcreateserial", "-days", "825", "-sha256", "-extfile", `${name}.cnf`, "-out", `${name}.pem`], dir);
}

const SERVER_LEAF = ["basicConstraints = critical,CA:false", "keyUsage = critical,digitalSignature", `subjectAltName = DNS:${TARGET_HOST}`];

export function chainIdentities(): ChainIdentities {
  const { fixture } = verifyIdentities();
  const dir = fixture.dir;
  const read = (name: string) => readFileSync(join(dir, name), "utf8");
  if (!existsSync(join(dir, "client-auth.pem"))) {
    issue(dir, "intermediate", "ca", "/CN=Test Intermediate CA", ["basicConstraints = critical,CA:true", "keyUsage = critical,keyCertSign,cRLSign"]);
    issue(dir, "via-intermediate", "intermediate", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
    issue(dir, "not-ca", "ca", "/CN=Test Not A CA", ["basicConstraints = critical,CA:false", "keyUsage = critical,keyCertSign,digitalSignature"]);
    issue(dir, "by-not-ca", "not-ca", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
    issue(dir, "client-auth", "ca", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = clientAuth"]);
  }
  if (!existsSync(join(dir, "beyond-path-length.pem"))) {
    issue(dir, "path-length-zero", "ca", "/CN=Test Intermediate CA, path length 0", ["basicConstraints = critical,CA:true,pathlen:0", "keyUsage = critical,keyCertSign,cRLSign"]);
    issue(dir, "via-path-length-zero", "path-length-zero", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
    issue(dir, "below-path-length-zero", "path-length-zero", "/CN=Test Intermediate CA below one of path length 0", ["basicConstraints = critical,CA:true", "keyUsage = critical,keyCertSign,cRLSign"]);
    issue(dir, "beyond-path-length", "below-path-length-zero", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
  }
  return {
    viaPathLengthZero: { leafKeyPem: read("via-path-length-zero.key"), chainPem: read("via-path-length-zero.pem") + read("path-length-zero.pem") },
    beyondPathLength: {
      leafKeyPem: read("beyond-path-length.key"),
      chainPem: read("beyond-path-length.pem") + read("below-path-length-zero.pem") + read("path-length-zero.pem"),
    },
    viaIntermediate: { leafKeyPem: read("via-intermediate.key"), chainPem: read("via-intermediate.pem") + read("intermediate.pem") },
    issuedByNonCa: { leafKeyPem: read("by-not-ca.key"), chainPem: read("by-not-ca.pem") + read("not-ca.pem") },
    clientAuthOnly: { leafKeyPem: read("client-auth.key"), chainPem: read("client-auth.pem") + fixture.caPem },
  };
}

/** Certificates for the chain check's corner cases (DER read by the check itself, names, keys), from the test CA. */
export interface CornerCertificates {
  /** An intermediate whose keyUsage comes before its basicConstraints (not critical, path length 0), and a leaf from it. */
  keyUsageFirst: { intermediate: string; leaf: string };
  /** An intermediate of path length 256 (a two-byte INTEGER), an intermediate CA below it, and a leaf from that one. */
  pathLength256: { intermediate: string; below: string; leaf: string };
  /** A leaf for TARGET_HOST without extended key usage. */
  noExtendedKeyUsage: string;
  /** A self-signed CA certificate for the test CA's key under another name. */
  renamedCa: string;
  /** A self-signed CA with an RSASSA-PSS key (unreadable by Bun's BoringSSL), and a leaf it issued. */
  pssCa: { ca: string; leaf: string };
  /** An X.509 v1 leaf (no extensions) that names TARGET_HOST in its common name only. */
  noExtensions: string;
}

export function cornerCertificates(): CornerCertificates {
  const { fixture } = verifyIdentities();
  const dir = fixture.dir;
  const read = (name: string) => readFileSync(join(dir, `${name}.pem`), "utf8");
  const selfSigned = (key: string, name: string, subject: string) =>
    openssl(["req", "-x509", "-new", "-key", key, "-subj", subject, "-days", "30", "-config", "/dev/null", "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign", "-out", `${name}.pem`], dir);
  if (!existsSync(join(dir, "via-pss-ca.pem"))) {
    issue(dir, "key-usage-first", "ca", "/CN=Test Intermediate CA, key usage first", ["keyUsage = critical,keyCertSign,cRLSign", "basicConstraints = CA:true,pathlen:0"]);
    issue(dir, "via-key-usage-first", "key-usage-first", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
    issue(dir, "path-length-256", "ca", "/CN=Test Intermediate CA, path length 256", ["basicConstraints = critical,CA:true,pathlen:256", "keyUsage = critical,keyCertSign,cRLSign"]);
    issue(dir, "below-path-length-256", "path-length-256", "/CN=Test Intermediate CA below one of path length 256", ["basicConstraints = critical,CA:true", "keyUsage = critical,keyCertSign,cRLSign"]);
    issue(dir, "via-path-length-256", "below-path-length-256", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
    issue(dir, "no-extended-key-usage", "ca", `/CN=${TARGET_HOST}`, SERVER_LEAF);
    selfSigned("ca.key", "renamed-ca", "/CN=Another Name For The Test CA Key");
    openssl(["genpkey", "-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "pss-ca.key"], dir);
    selfSigned("pss-ca.key", "pss-ca", "/CN=Test RSASSA-PSS CA");
    issue(dir, "via-pss-ca", "pss-ca", `/CN=${TARGET_HOST}`, [...SERVER_LEAF, "extendedKeyUsage = serverAuth"]);
  }
  if (!existsSync(join(dir, "no-extensions.pem"))) issue(dir, "no-extensions", "ca", `/CN=${TARGET_HOST}`, []);
  return {
    keyUsageFirst: { intermediate: read("key-usage-first"), leaf: read("via-key-usage-first") },
    pathLength256: { intermediate: read("path-length-256"), below: read("below-path-length-256"), leaf: read("via-path-length-256") },
    noExtendedKeyUsage: read("no-extended-key-usage"),
    renamedCa: read("renamed-ca"),
    pssCa: { ca: read("pss-ca"), leaf: read("via-pss-ca") },
    noExtensions: read("no-extensions"),
  };
}
