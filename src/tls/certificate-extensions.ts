/**
 * A certificate's extensions read from its DER (src/core/der.ts), for what X509Certificate does not tell: the path
 * length in basicConstraints, nameConstraints, and the subjectAltName entries as they are written.
 */
import type { X509Certificate } from "node:crypto";
import { DER_TAG, decodeOid, derReader } from "../core/der.ts";
import { AppError } from "../core/errors.ts";

export const untrusted = (message: string): AppError => new AppError("tls_untrusted", message);
export const certificateDer = derReader("certificate", untrusted);

export const EXTENSION_ID = {
  basicConstraints: "2.5.29.19",
  subjectAltName: "2.5.29.17",
  nameConstraints: "2.5.29.30",
} as const;

export interface Extension {
  critical: boolean;
  /** The extnValue's content: the extension's own DER. */
  value: Uint8Array;
}

/** The extension `id` of `cert`, if it has one; one written twice (RFC 5280 forbids it) is refused. */
export function extensionOf(cert: X509Certificate, id: string): Extension | undefined {
  const [tbs] = certificateDer.sequence(cert.raw, "certificate");
  const extensions = certificateDer.all(certificateDer.expect(tbs, DER_TAG.sequence, "a TBSCertificate")).find((field) => field.tag === DER_TAG.explicit3);
  if (!extensions) return undefined;
  const found: Extension[] = [];
  for (const extension of certificateDer.sequence(extensions.content, "extensions")) {
    const [oid, ...rest] = certificateDer.all(certificateDer.expect(extension, DER_TAG.sequence, "an extension"));
    if (decodeOid(certificateDer.expect(oid, DER_TAG.oid, "an extension id")) !== id) continue;
    // `critical` is DEFAULT FALSE: DER writes it only when true.
    found.push({ critical: rest.length > 1, value: certificateDer.expect(rest.at(-1), DER_TAG.octetString, "an extension value") });
  }
  if (found.length > 1) throw untrusted(`a certificate in the server's chain has the extension ${id} more than once`);
  return found[0];
}
