import { DER_TAG, derTlv } from "../../../src/core/der.ts";
import type { RawExtension } from "../../../src/engine/test-ca.ts";

/** nameConstraints extensions for test CA certificates (src/engine/test-ca.ts writes them as given). */

export const NAME_CONSTRAINTS = "2.5.29.30";
export const SUBJECT_ALT_NAME = "2.5.29.17";

const text = (value: string) => new TextEncoder().encode(value);
/** GeneralNames. */
export const dns = (name: string): Uint8Array => derTlv(DER_TAG.dnsName, text(name));
export const ip = (address: readonly number[], mask: readonly number[]): Uint8Array => derTlv(DER_TAG.ipAddress, Uint8Array.from([...address, ...mask]));
export const email = (address: string): Uint8Array => derTlv(0x81, text(address));
/** A directoryName: CN=<commonName>. */
export const directoryName = (commonName: string): Uint8Array =>
  derTlv(0xa4, derTlv(DER_TAG.sequence, derTlv(DER_TAG.set, derTlv(DER_TAG.sequence, derTlv(DER_TAG.oid, Uint8Array.of(0x55, 4, 3)), derTlv(DER_TAG.utf8String, text(commonName))))));

/** The extension as written, whatever `value` holds. */
export const rawNameConstraints = (value: Uint8Array, critical = true): RawExtension => ({ id: NAME_CONSTRAINTS, critical, value });

/** A nameConstraints extension permitting and excluding subtrees of these base names. */
export function nameConstraints(subtrees: { permitted?: Uint8Array[]; excluded?: Uint8Array[] }, critical = true): RawExtension {
  const list = (tag: number, bases: Uint8Array[] = []) => (bases.length > 0 ? [derTlv(tag, ...bases.map((base) => derTlv(DER_TAG.sequence, base)))] : []);
  return rawNameConstraints(derTlv(DER_TAG.sequence, ...list(DER_TAG.permittedSubtrees, subtrees.permitted), ...list(DER_TAG.excludedSubtrees, subtrees.excluded)), critical);
}

/** A subjectAltName extension of these GeneralNames, for a leaf whose names the writer would not take. */
export const subjectAltNames = (...names: Uint8Array[]): RawExtension => ({ id: SUBJECT_ALT_NAME, critical: false, value: derTlv(DER_TAG.sequence, ...names) });
