import { mkdirSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A test CA with the subject of the anchor that trust-anchor.ts replaces, and a leaf certificate for
 * TARGET_HOST, made with the real openssl binary. Cached per folder: tests share one CA.
 */
export const TARGET_HOST = "target.tlsproof.test";
/** A host name no test server's trusted certificate names except the wrong-host one. */
export const OTHER_HOST = "elsewhere.tlsproof.test";

/** A certificate chain and its leaf's key: what a TLS server presents. */
export interface ServerIdentity {
  leafKeyPem: string;
  /** Leaf then CA: the chain a server presents. */
  chainPem: string;
}

export interface TlsFixture extends ServerIdentity {
  dir: string;
  caPath: string;
  caPem: string;
}

function openssl(args: string[], cwd: string): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd, stderr: "pipe", stdout: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
}

/** `<name>.pem` and `<name>.key`: a P-256 CA whose subject is the built-in root's (the anchor replaced in tests). */
function makeCa(dir: string, name: string): void {
  writeFileSync(
    join(dir, "ca.cnf"),
    [
      "[req]", "distinguished_name = dn", "prompt = no", "string_mask = default", "x509_extensions = ext",
      "[dn]", "OU = GlobalSign ECC Root CA - R4", "O = GlobalSign", "CN = GlobalSign",
      "[ext]", "basicConstraints = critical,CA:true", "keyUsage = critical,keyCertSign,cRLSign",
      "subjectKeyIdentifier = hash",
    ].join("\n"),
  );
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
  openssl(["req", "-x509", "-new", "-key", `${name}.key`, "-config", "ca.cnf", "-days", "3650", "-sha256", "-out", `${name}.pem`], dir);
}

/** `<name>.pem`, `<name>.key` and `chainFile` (leaf then CA): a server certificate for `host` issued by CA `ca`. */
function makeLeaf(dir: string, name: string, ca: string, host: string, chainFile: string): void {
  writeFileSync(
    join(dir, `${name}.cnf`),
    [
      "basicConstraints = critical,CA:false", "keyUsage = critical,digitalSignature",
      "extendedKeyUsage = serverAuth", `subjectAltName = DNS:${host}`,
    ].join("\n"),
  );
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
  openssl(["req", "-new", "-key", `${name}.key`, "-subj", `/CN=${host}`, "-out", `${name}.csr`], dir);
  openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "825",
      "-sha256", "-extfile", `${name}.cnf`, "-out", `${name}.pem`],
    dir,
  );
  writeFileSync(join(dir, chainFile), readFileSync(join(dir, `${name}.pem`), "utf8") + readFileSync(join(dir, `${ca}.pem`), "utf8"));
}

const identity = (dir: string, name: string, chainFile: string): ServerIdentity => ({
  leafKeyPem: readFileSync(join(dir, `${name}.key`), "utf8"),
  chainPem: readFileSync(join(dir, chainFile), "utf8"),
});

export function makeTlsFixture(dir: string): TlsFixture {
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, "chain.pem"))) {
    makeCa(dir, "ca");
    makeLeaf(dir, "leaf", "ca", TARGET_HOST, "chain.pem");
  }
  const caPath = join(dir, "ca.pem");
  return { dir, caPath, caPem: readFileSync(caPath, "utf8"), ...identity(dir, "leaf", "chain.pem") };
}

/** Server identities a prover trusting `fixture`'s CA must refuse. */
export interface UntrustedIdentities {
  /** A leaf for TARGET_HOST from another CA with the trusted root's exact subject but its own key. */
  impostorCa: ServerIdentity;
  /** A leaf from the trusted CA, valid in every way but for OTHER_HOST. */
  wrongHost: ServerIdentity;
}

export function makeUntrustedIdentities(fixture: TlsFixture): UntrustedIdentities {
  const { dir } = fixture;
  if (!existsSync(join(dir, "impostor-chain.pem"))) {
    makeCa(dir, "impostor-ca");
    makeLeaf(dir, "impostor-leaf", "impostor-ca", TARGET_HOST, "impostor-chain.pem");
  }
  return { impostorCa: identity(dir, "impostor-leaf", "impostor-chain.pem"), wrongHost: trustedIdentityFor(fixture, OTHER_HOST) };
}

/** A server identity for `host` from the trusted test CA (cached like the rest). */
export function trustedIdentityFor(fixture: TlsFixture, host: string): ServerIdentity {
  const name = `host-${host}`;
  if (!existsSync(join(fixture.dir, `${name}-chain.pem`))) makeLeaf(fixture.dir, name, "ca", host, `${name}-chain.pem`);
  return identity(fixture.dir, name, `${name}-chain.pem`);
}

/** A TLS server identity from the trusted test CA for `localhost`, with its files: for a notary's tls section. */
export interface LocalhostIdentity extends ServerIdentity {
  keyPath: string;
  chainPath: string;
}

export function makeLocalhostIdentity(fixture: TlsFixture): LocalhostIdentity {
  const { dir } = fixture;
  return { ...trustedIdentityFor(fixture, "localhost"), keyPath: join(dir, "host-localhost.key"), chainPath: join(dir, "host-localhost-chain.pem") };
}
