import { createHash } from "node:crypto";
import { closeSync, mkdirSync, existsSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type CertificateOptions, type IssuedCertificate, issueCertificate, loadTestCa, makeTestCa, validFor } from "../src/engine/test-ca.ts";

/**
 * A test CA with the subject of the anchor that trust-anchor.ts replaces, and a leaf certificate for
 * TARGET_HOST, made by src/engine/test-ca.ts (what `cli testca` uses). Cached per folder: tests share one CA.
 * Only the RSA identity needs the openssl binary (the certificate writer makes P-256 keys only).
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

/** Writes `<name>.pem` and `<name>.key`. */
function save(dir: string, name: string, certificate: IssuedCertificate): IssuedCertificate {
  writeFileSync(join(dir, `${name}.pem`), certificate.pem);
  writeFileSync(join(dir, `${name}.key`), certificate.keyPem);
  return certificate;
}

/** `<name>.pem` and `<name>.key`: a P-256 CA whose subject is the built-in root's (the anchor replaced in tests). */
const makeCa = (dir: string, name: string): IssuedCertificate => save(dir, name, makeTestCa());

/** The CA `<name>` made earlier in `dir`. */
const loadCa = (dir: string, name: string): IssuedCertificate =>
  loadTestCa(readFileSync(join(dir, `${name}.pem`), "utf8"), readFileSync(join(dir, `${name}.key`), "utf8"));

const pemOf = (dir: string, ...names: string[]): string => names.map((name) => readFileSync(join(dir, `${name}.pem`), "utf8")).join("");

/**
 * `<name>.pem`, `<name>.key` and `chainFile` (leaf then CA): a server certificate issued by CA `ca` whose subject
 * names `host` and whose subjectAltName names `altName` (the name clients check); `validity` when given.
 */
function makeLeaf(dir: string, name: string, ca: string, host: string, chainFile: string, altName = host, validity: Pick<CertificateOptions, "notBefore" | "notAfter"> = {}): void {
  save(dir, name, issueCertificate({ subject: { commonName: host }, dnsNames: [altName], ...validity }, loadCa(dir, ca)));
  writeFileSync(join(dir, chainFile), pemOf(dir, name, ca));
}

/** A leaf for TARGET_HOST from CA `ca` that expired years ago. */
const makeExpiredLeaf = (dir: string, name: string, ca: string, chainFile: string): void =>
  makeLeaf(dir, name, ca, TARGET_HOST, chainFile, TARGET_HOST, { notBefore: new Date("2020-01-01T00:00:00Z"), notAfter: new Date("2021-01-01T00:00:00Z") });

/** A leaf for TARGET_HOST signed with its own key (no CA at all). */
function makeSelfSignedLeaf(dir: string, name: string, chainFile: string): void {
  save(dir, name, issueCertificate({ subject: { commonName: TARGET_HOST }, dnsNames: [TARGET_HOST] }));
  writeFileSync(join(dir, chainFile), pemOf(dir, name));
}

/** A leaf for TARGET_HOST from an intermediate CA that CA `ca` issued; `chainFile` holds the leaf alone. */
function makeLeafWithoutIntermediate(dir: string, name: string, ca: string, chainFile: string): void {
  const intermediate = save(dir, `${name}-intermediate`, issueCertificate({ subject: { commonName: "tlsproof test intermediate" }, ca: { pathLength: 0 } }, loadCa(dir, ca)));
  save(dir, name, issueCertificate({ subject: { commonName: TARGET_HOST }, dnsNames: [TARGET_HOST] }, intermediate));
  writeFileSync(join(dir, chainFile), pemOf(dir, name));
}

const identity = (dir: string, name: string, chainFile: string): ServerIdentity => ({
  leafKeyPem: readFileSync(join(dir, `${name}.key`), "utf8"),
  chainPem: readFileSync(join(dir, chainFile), "utf8"),
});

/** What made a fixture folder: this file's text and the certificate writer's. A folder made by another version is made again. */
const GENERATOR = createHash("sha256")
  .update(readFileSync(import.meta.path))
  .update(readFileSync(join(import.meta.dir, "..", "src", "engine", "test-ca.ts")))
  .digest("hex");
const STAMP = "generator.sha256";

/** Whether the certificate in `file` is still valid a day from now. */
const validForADay = (dir: string, file: string): boolean => validFor(readFileSync(join(dir, file), "utf8"), 86_400_000);

/**
 * Whether the cached fixture in `dir` can be used: made by this generator, and its CA and leaf valid for a day
 * more. Otherwise every file in it goes (the identities made from its CA are made again when asked for).
 */
function usable(dir: string): boolean {
  const stamp = join(dir, STAMP);
  return existsSync(stamp) && readFileSync(stamp, "utf8") === GENERATOR && validForADay(dir, "ca.pem") && validForADay(dir, "leaf.pem");
}

/** How long a fixture's lock may be held before its holder is taken for dead (making all of it takes well under a second). */
const STALE_LOCK_MS = 30_000;

/**
 * Runs `work` holding the fixture folder's lock. Test files run two at a time in separate processes: two that made
 * the fixture at once wrote their own CA and leaf over each other's, and a prover could trust one CA while its target
 * presented a leaf of the other (seen in CI as a 502 from a fresh clone's first files).
 */
function locked<T>(dir: string, work: () => T): T {
  const lock = `${dir}.lock`;
  mkdirSync(dirname(lock), { recursive: true });
  const started = Date.now();
  for (;;) {
    try {
      closeSync(openSync(lock, "wx"));
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw error;
      const heldMs = (() => {
        try {
          return Date.now() - statSync(lock).mtimeMs;
        } catch {
          return 0; // let go just now
        }
      })();
      if (heldMs > STALE_LOCK_MS) rmSync(lock, { force: true });
      if (Date.now() - started > 4 * STALE_LOCK_MS) throw new Error(`the test fixture's lock ${lock} stayed held`);
      Bun.sleepSync(20);
    }
  }
  try {
    return work();
  } finally {
    rmSync(lock, { force: true });
  }
}

export function makeTlsFixture(dir: string): TlsFixture {
  return locked(dir, () => {
    if (existsSync(dir) && !usable(dir)) rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    if (!existsSync(join(dir, "chain.pem"))) {
      makeCa(dir, "ca");
      makeLeaf(dir, "leaf", "ca", TARGET_HOST, "chain.pem");
      writeFileSync(join(dir, STAMP), GENERATOR);
    }
    const caPath = join(dir, "ca.pem");
    return { dir, caPath, caPem: readFileSync(caPath, "utf8"), ...identity(dir, "leaf", "chain.pem") };
  });
}

/** Server identities a prover trusting `fixture`'s CA must refuse. */
export interface UntrustedIdentities {
  /** A leaf for TARGET_HOST from another CA with the trusted root's exact subject but its own key. */
  impostorCa: ServerIdentity;
  /** A leaf from the trusted CA, valid in every way but for OTHER_HOST. */
  wrongHost: ServerIdentity;
  /** A leaf from the trusted CA whose subject names TARGET_HOST but whose subjectAltName names OTHER_HOST only. */
  altNameMismatch: ServerIdentity;
  /** A leaf for TARGET_HOST from the trusted CA whose validity ended in 2021. */
  expired: ServerIdentity;
  /** A leaf for TARGET_HOST that signed itself. */
  selfSigned: ServerIdentity;
  /** A leaf for TARGET_HOST from an intermediate of the trusted CA, presented without that intermediate. */
  missingIntermediate: ServerIdentity;
}

/** `chainFile` in the fixture's folder, made by `make` unless an earlier run made it (its leaf is `name`). */
function cached(dir: string, name: string, chainFile: string, make: () => void): ServerIdentity {
  return locked(dir, () => {
    if (!existsSync(join(dir, chainFile))) make();
    return identity(dir, name, chainFile);
  });
}

export function makeUntrustedIdentities(fixture: TlsFixture): UntrustedIdentities {
  const { dir } = fixture;
  return {
    impostorCa: cached(dir, "impostor-leaf", "impostor-chain.pem", () => {
      makeCa(dir, "impostor-ca");
      makeLeaf(dir, "impostor-leaf", "impostor-ca", TARGET_HOST, "impostor-chain.pem");
    }),
    wrongHost: trustedIdentityFor(fixture, OTHER_HOST),
    altNameMismatch: cached(dir, "alt-name-leaf", "alt-name-chain.pem", () =>
      makeLeaf(dir, "alt-name-leaf", "ca", TARGET_HOST, "alt-name-chain.pem", OTHER_HOST),
    ),
    expired: cached(dir, "expired-leaf", "expired-chain.pem", () => makeExpiredLeaf(dir, "expired-leaf", "ca", "expired-chain.pem")),
    selfSigned: cached(dir, "self-signed-leaf", "self-signed-chain.pem", () => makeSelfSignedLeaf(dir, "self-signed-leaf", "self-signed-chain.pem")),
    missingIntermediate: cached(dir, "intermediate-leaf", "intermediate-leaf-only.pem", () =>
      makeLeafWithoutIntermediate(dir, "intermediate-leaf", "ca", "intermediate-leaf-only.pem"),
    ),
  };
}

/**
 * An RSA-2048 leaf for TARGET_HOST from the trusted test CA (cached like the rest); its key usage allows RSA key
 * exchange too, which verifiers must refuse.
 */
export function rsaIdentity(fixture: TlsFixture): ServerIdentity {
  const { dir } = fixture;
  return cached(dir, "rsa", "rsa-chain.pem", () => {
    writeFileSync(
      join(dir, "rsa.cnf"),
      ["basicConstraints = critical,CA:false", "keyUsage = critical,digitalSignature,keyEncipherment", "extendedKeyUsage = serverAuth", `subjectAltName = DNS:${TARGET_HOST}`].join("\n"),
    );
    openssl(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-subj", `/CN=${TARGET_HOST}`, "-out", "rsa.csr"], dir);
    openssl(["x509", "-req", "-in", "rsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "825", "-sha256", "-extfile", "rsa.cnf", "-out", "rsa.pem"], dir);
    writeFileSync(join(dir, "rsa-chain.pem"), pemOf(dir, "rsa", "ca"));
  });
}

/**
 * A leaf for TARGET_HOST whose key is an RSASSA-PSS key (not rsaEncryption), from the trusted test CA (cached like
 * the rest): TLS 1.3 servers sign with rsa_pss_pss_* for it.
 */
export function rsaPssIdentity(fixture: TlsFixture): ServerIdentity {
  const { dir } = fixture;
  return cached(dir, "rsa-pss", "rsa-pss-chain.pem", () => {
    writeFileSync(
      join(dir, "rsa-pss.cnf"),
      ["basicConstraints = critical,CA:false", "keyUsage = critical,digitalSignature", "extendedKeyUsage = serverAuth", `subjectAltName = DNS:${TARGET_HOST}`].join("\n"),
    );
    openssl(["genpkey", "-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa-pss.key"], dir);
    openssl(["req", "-new", "-key", "rsa-pss.key", "-subj", `/CN=${TARGET_HOST}`, "-out", "rsa-pss.csr"], dir);
    openssl(["x509", "-req", "-in", "rsa-pss.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "825", "-sha256", "-extfile", "rsa-pss.cnf", "-out", "rsa-pss.pem"], dir);
    writeFileSync(join(dir, "rsa-pss-chain.pem"), pemOf(dir, "rsa-pss", "ca"));
  });
}

/** A server identity for `host` from the trusted test CA (cached like the rest). */
export function trustedIdentityFor(fixture: TlsFixture, host: string): ServerIdentity {
  const name = `host-${host}`;
  return cached(fixture.dir, name, `${name}-chain.pem`, () => makeLeaf(fixture.dir, name, "ca", host, `${name}-chain.pem`));
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
