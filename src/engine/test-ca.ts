/**
 * Test certificates without openssl: a test CA whose subject is exactly the anchor trust-anchor.ts replaces
 * (GlobalSign ECC Root CA - R4: OU, O, CN as PrintableStrings) with a fresh P-256 key, and server certificates it
 * issues. Plain X.509 v3 in DER, signed ECDSA P-256 with SHA-256 (@noble/curves): what `cli testca` writes, what
 * `cli demo` serves, and what the tests' fixtures are made of. Nothing here is trusted by anything unless a
 * process is started with TLSN_TEST_TRUST_ANCHOR naming the CA.
 */
import { X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { p256 } from "@noble/curves/nist.js";
import { sha256 } from "../core/sha256.ts";
import { DER_TAG as TAG, decodeOid, derInteger, derOid as oid, derReader, derTlv as tlv } from "../core/der.ts";
import { AppError } from "../core/errors.ts";
import { decodePrivateKeyPem, encodePrivateKeyPem, generateKey, pem, spkiDer } from "../proof/keys.ts";
import { ANCHOR_SUBJECT, testCaPoint } from "./trust-anchor.ts";

/** A certificate with its key: enough to serve it (leaf) or to issue more (CA). */
export interface IssuedCertificate {
  pem: string;
  /** PKCS#8 PEM of its P-256 key. */
  keyPem: string;
  privateKey: Uint8Array;
  /** Its subject Name, DER: the issuer Name of what it signs. */
  subject: Uint8Array;
  /** Its subjectKeyIdentifier: the authorityKeyIdentifier of what it signs. */
  keyId: Uint8Array;
}

export interface CertificateOptions {
  /** The anchor's subject (a test CA), or CN=<commonName>. */
  subject: "anchor" | { commonName: string };
  /** DNS names for subjectAltName, the names TLS clients check (a server certificate needs one). */
  dnsNames?: readonly string[];
  /** IP addresses for subjectAltName, their 4 or 16 bytes as they are written. */
  ipAddresses?: readonly Uint8Array[];
  /** A CA certificate (keyCertSign), with an optional path length; otherwise a TLS server certificate. */
  ca?: { pathLength?: number };
  notBefore?: Date;
  notAfter?: Date;
  /** Further extensions, written as given after the others (the tests' name constraints, well formed or not). */
  extensions?: readonly RawExtension[];
}

export interface RawExtension {
  id: string;
  critical: boolean;
  /** The extnValue's content: the extension's own DER. */
  value: Uint8Array;
}

const DAY_MS = 24 * 3600 * 1000;
/** Validity when not given: from an hour ago (clocks differ a little), a CA ten years, a server certificate 825 days (what browsers accept). */
const CA_DAYS = 3650;
const LEAF_DAYS = 825;

const OID = {
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extendedKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  subjectAltName: "2.5.29.17",
  subjectKeyIdentifier: "2.5.29.14",
  authorityKeyIdentifier: "2.5.29.35",
} as const;

const text = (value: string) => new TextEncoder().encode(value);
const SIGNATURE_ALGORITHM = tlv(TAG.sequence, oid(OID.ecdsaWithSha256));

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), to the second. */
function time(at: Date): Uint8Array {
  const digits = at.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return at.getUTCFullYear() < 2050 ? tlv(TAG.utcTime, text(`${digits.slice(2)}Z`)) : tlv(TAG.generalizedTime, text(`${digits}Z`));
}

/** A positive INTEGER of 16 random bytes (RFC 5280: at most 20 octets). */
function serialNumber(): Uint8Array {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return tlv(TAG.integer, bytes);
}

const extension = (id: string, critical: boolean, value: Uint8Array) =>
  tlv(TAG.sequence, oid(id), ...(critical ? [tlv(TAG.boolean, Uint8Array.of(0xff))] : []), tlv(TAG.octetString, value));

/** keyUsage BIT STRING: keyCertSign and cRLSign (bits 5, 6), or digitalSignature (bit 0). */
const CA_KEY_USAGE = tlv(TAG.bitString, Uint8Array.of(1, 0x06));
const SERVER_KEY_USAGE = tlv(TAG.bitString, Uint8Array.of(7, 0x80));

/**
 * The extensions. The authorityKeyIdentifier names the issuer's key: verifiers that hold the real root beside the
 * test CA (the same subject) pick the issuer by it, and would otherwise try the real root's key.
 */
function extensions(options: CertificateOptions, keyId: Uint8Array, issuer: IssuedCertificate | undefined): Uint8Array {
  const { ca, dnsNames = [], ipAddresses = [] } = options;
  const list = [
    extension(OID.basicConstraints, true, tlv(TAG.sequence, ...(ca ? [tlv(TAG.boolean, Uint8Array.of(0xff))] : []),
      ...(ca?.pathLength !== undefined ? [derInteger(ca.pathLength)] : []))),
    extension(OID.keyUsage, true, ca ? CA_KEY_USAGE : SERVER_KEY_USAGE),
    extension(OID.subjectKeyIdentifier, false, tlv(TAG.octetString, keyId)),
  ];
  if (issuer) list.push(extension(OID.authorityKeyIdentifier, false, tlv(TAG.sequence, tlv(TAG.keyIdentifier, issuer.keyId))));
  if (!ca) list.push(extension(OID.extendedKeyUsage, false, tlv(TAG.sequence, oid(OID.serverAuth))));
  const altNames = [...dnsNames.map((name) => tlv(TAG.dnsName, text(name))), ...ipAddresses.map((address) => tlv(TAG.ipAddress, address))];
  if (altNames.length > 0) list.push(extension(OID.subjectAltName, false, tlv(TAG.sequence, ...altNames)));
  for (const { id, critical, value } of options.extensions ?? []) list.push(extension(id, critical, value));
  return tlv(TAG.explicit3, tlv(TAG.sequence, ...list));
}

function subjectName(subject: CertificateOptions["subject"]): Uint8Array {
  if (subject === "anchor") return tlv(TAG.sequence, ANCHOR_SUBJECT);
  return tlv(TAG.sequence, tlv(TAG.set, tlv(TAG.sequence, oid(OID.commonName), tlv(TAG.utf8String, text(subject.commonName)))));
}

/** The leftmost 160 bits of the key's SHA-256 (RFC 7093, method 1). */
const keyIdentifier = (point: Uint8Array): Uint8Array => sha256(point).subarray(0, 20);

const certificateDer = derReader("certificate", (reason) => new AppError("config_invalid", `the CA certificate: ${reason}`));

/** A certificate's subjectKeyIdentifier, if it has one. */
function subjectKeyIdentifier(der: Uint8Array): Uint8Array | undefined {
  const [tbs] = certificateDer.sequence(der, "certificate");
  const fields = certificateDer.all(certificateDer.expect(tbs, TAG.sequence, "a TBSCertificate"));
  const extensionList = fields.find((field) => field.tag === TAG.explicit3);
  if (!extensionList) return undefined;
  for (const item of certificateDer.sequence(extensionList.content, "extensions")) {
    const [id, ...rest] = certificateDer.all(certificateDer.expect(item, TAG.sequence, "an extension"));
    if (decodeOid(certificateDer.expect(id, TAG.oid, "an extension id")) !== OID.subjectKeyIdentifier) continue;
    const value = certificateDer.expect(rest.at(-1), TAG.octetString, "an extension value");
    return certificateDer.expect(certificateDer.all(value)[0], TAG.octetString, "a key identifier");
  }
  return undefined;
}

/** A DNS name as certificates carry it: letters, digits, hyphens and dots (a leading `*.` for a wildcard). */
const DNS_NAME = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/**
 * A certificate for a fresh P-256 key, issued by `issuer` (a CA made here or loaded by `loadTestCa`), or by
 * itself when there is none.
 */
export function issueCertificate(options: CertificateOptions, issuer?: IssuedCertificate): IssuedCertificate {
  for (const name of options.dnsNames ?? []) {
    if (isIP(name) !== 0 || !DNS_NAME.test(name)) throw new AppError("usage", `"${name}" is not a DNS name (certificates name hosts by DNS name; TLS clients refuse IP addresses here)`);
  }
  const key = generateKey("secp256r1");
  const point = p256.getPublicKey(key.privateKey, false);
  const keyId = keyIdentifier(point);
  const subject = subjectName(options.subject);
  const now = Date.now();
  const notBefore = options.notBefore ?? new Date(now - 3600_000);
  const notAfter = options.notAfter ?? new Date(now + (options.ca ? CA_DAYS : LEAF_DAYS) * DAY_MS);
  const tbs = tlv(
    TAG.sequence,
    tlv(TAG.explicit0, derInteger(2)),
    serialNumber(),
    SIGNATURE_ALGORITHM,
    issuer?.subject ?? subject,
    tlv(TAG.sequence, time(notBefore), time(notAfter)),
    subject,
    spkiDer({ algorithm: "secp256r1", point }),
    extensions(options, keyId, issuer),
  );
  const signature = p256.sign(tbs, issuer?.privateKey ?? key.privateKey, { format: "der" });
  const der = tlv(TAG.sequence, tbs, SIGNATURE_ALGORITHM, tlv(TAG.bitString, Uint8Array.of(0), signature));
  return { pem: pem("CERTIFICATE", der), keyPem: encodePrivateKeyPem(key), privateKey: key.privateKey, subject, keyId };
}

/** A fresh test CA: the anchor's subject, a new key. */
export const makeTestCa = (): IssuedCertificate => issueCertificate({ subject: "anchor", ca: {} });

/** A TLS server certificate from `ca` for `names` (the first is also its common name). */
export function issueServerCertificate(ca: IssuedCertificate, names: readonly string[]): IssuedCertificate {
  if (names.length === 0) throw new AppError("usage", "a server certificate needs at least one DNS name");
  return issueCertificate({ subject: { commonName: names[0]! }, dnsNames: names }, ca);
}

/**
 * A test CA from its PEM files, to issue more server certificates: its subject must be the anchor's and its key
 * the one in the certificate (AppError config_invalid otherwise).
 */
export function loadTestCa(caPem: string, keyPem: string): IssuedCertificate {
  const point = testCaPoint(caPem);
  const key = decodePrivateKeyPem(keyPem);
  if (key.algorithm !== "secp256r1" || !p256.getPublicKey(key.privateKey, false).every((byte, i) => byte === point[i])) {
    throw new AppError("config_invalid", "the CA key does not belong to the CA certificate");
  }
  const keyId = subjectKeyIdentifier(new Uint8Array(new X509Certificate(caPem).raw)) ?? keyIdentifier(point);
  return { pem: caPem, keyPem, privateKey: key.privateKey, subject: tlv(TAG.sequence, ANCHOR_SUBJECT), keyId };
}

/** Whether a certificate is valid from now until `ms` later. */
export function validFor(certificatePem: string, ms: number): boolean {
  const cert = new X509Certificate(certificatePem);
  const now = Date.now();
  return Date.parse(cert.validFrom) <= now && Date.parse(cert.validTo) >= now + ms;
}
