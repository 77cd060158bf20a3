/**
 * X.509 name constraints (RFC 5280 4.2.1.10), as webpki applies them in MPC mode: every CA certificate on the path
 * (the anchor too) constrains the leaf's names, that is its DNS and IP subjectAltNames and the server name checked
 * (which a leaf may carry in its common name only). A DNS constraint `example.com` covers that name and its
 * subdomains, `.example.com` its subdomains only, an empty one every name, regardless of case; an IP constraint an
 * address block. When the permitted subtrees list names of a type, each of the leaf's names of that type must fall
 * within one of them; a name within an excluded subtree is refused. A constraint of another type (directoryName,
 * rfc822Name, URI, ...) is not checked here: it refuses the chain when the extension is critical or when the leaf
 * carries a name of its type (its subject counts as a directoryName), and so does an extension that does not read.
 */
import type { X509Certificate } from "node:crypto";
import { DER_TAG, type Tlv, derReader } from "../core/der.ts";
import { EXTENSION_ID, extensionOf, untrusted } from "./certificate-extensions.ts";

type Subtree = { type: "dns"; name: string } | { type: "ip"; address: Uint8Array; mask: Uint8Array } | { type: "other"; tag: number; name: string };

export interface NameConstraints {
  /** The CA certificate they come from, as refusals name it. */
  ca: string;
  critical: boolean;
  permitted: Subtree[];
  excluded: Subtree[];
}

/** The leaf's names the constraints apply to, and the GeneralName tags it carries. */
export interface LeafNames {
  dns: string[];
  ips: Uint8Array[];
  tags: Set<number>;
}

/** The GeneralName types other than dNSName and iPAddress, by tag (RFC 5280 4.2.1.6). */
const OTHER_TYPES = new Map([
  [0xa0, "otherName"],
  [0x81, "rfc822Name"],
  [0xa3, "x400Address"],
  [0xa4, "directoryName"],
  [0xa5, "ediPartyName"],
  [0x86, "uniformResourceIdentifier"],
  [0x88, "registeredID"],
]);
const DIRECTORY_NAME = 0xa4;

const latin1 = new TextDecoder("latin1");
/** A DNS name as it is compared: lower case, without a final dot. */
const dnsForm = (name: string): string => name.toLowerCase().replace(/\.$/, "");
/** A dNSName constraint: empty, or labels of letters, digits and hyphens, with an optional leading dot. */
const DNS_CONSTRAINT = /^(\.?[a-z0-9-]+(\.[a-z0-9-]+)*)?$/;
/** An IP mask: ones, then zeros. */
const PREFIX = /^1*0*$/;

/** The nameConstraints of `ca` (described as `describe` in refusals), if it has any. */
export function readNameConstraints(ca: X509Certificate, describe: string): NameConstraints | undefined {
  const extension = extensionOf(ca, EXTENSION_ID.nameConstraints);
  if (!extension) return undefined;
  const malformed = (reason: string) => untrusted(`${describe} has unreadable name constraints (${reason})`);
  const der = derReader("nameConstraints", malformed);
  const subtree = (item: Tlv): Subtree => {
    const [base, ...rest] = der.all(der.expect(item, DER_TAG.sequence, "a GeneralSubtree"));
    if (base === undefined || rest.length > 0) throw malformed("a GeneralSubtree must hold its base name alone: RFC 5280 uses no minimum or maximum");
    if (base.tag === DER_TAG.dnsName) {
      const name = latin1.decode(base.content).toLowerCase();
      if (!DNS_CONSTRAINT.test(name)) throw malformed("a dNSName constraint that is not a domain name");
      return { type: "dns", name };
    }
    if (base.tag === DER_TAG.ipAddress) {
      const half = base.content.length / 2;
      if (half !== 4 && half !== 16) throw malformed(`an iPAddress constraint of ${base.content.length} bytes, not an address and mask of 8 or 32`);
      const mask = base.content.subarray(half);
      if (!PREFIX.test(Array.from(mask, (byte) => byte.toString(2).padStart(8, "0")).join(""))) throw malformed("an iPAddress constraint whose mask is not a prefix");
      return { type: "ip", address: base.content.subarray(0, half), mask };
    }
    const name = OTHER_TYPES.get(base.tag);
    if (name === undefined) throw malformed(`a GeneralName of unknown tag 0x${base.tag.toString(16)}`);
    return { type: "other", tag: base.tag, name };
  };
  const fields = der.sequence(extension.value, "nameConstraints");
  const permitted = fields[0]?.tag === DER_TAG.permittedSubtrees ? fields[0] : undefined;
  const excluded = fields.at(-1)?.tag === DER_TAG.excludedSubtrees ? fields.at(-1) : undefined;
  // Each list at most once, permitted first, nothing else.
  if (fields.length !== Number(permitted !== undefined) + Number(excluded !== undefined)) throw malformed("expected permittedSubtrees, excludedSubtrees or both, in that order");
  return {
    ca: describe,
    critical: extension.critical,
    permitted: der.all(permitted?.content ?? new Uint8Array()).map(subtree),
    excluded: der.all(excluded?.content ?? new Uint8Array()).map(subtree),
  };
}

/** The names of `leaf` that name constraints apply to, the server name first. */
export function leafNames(leaf: X509Certificate, serverName: string): LeafNames {
  const altNames = extensionOf(leaf, EXTENSION_ID.subjectAltName);
  // The runtime reads the name from the common name when it cannot read these; the names here must all be read.
  const der = derReader("subjectAltName", (reason) => untrusted(`the server's certificate has an unreadable subjectAltName (${reason})`));
  const entries = altNames ? der.sequence(altNames.value, "subjectAltName") : [];
  return {
    dns: [serverName, ...entries.filter((entry) => entry.tag === DER_TAG.dnsName).map((entry) => latin1.decode(entry.content))].map(dnsForm),
    ips: entries.filter((entry) => entry.tag === DER_TAG.ipAddress).map((entry) => entry.content),
    tags: new Set([DIRECTORY_NAME, ...entries.map((entry) => entry.tag)]),
  };
}

/** Whether `name` lies within the constraint `base`. */
const dnsWithin = (name: string, base: string): boolean => base === "" || (base.startsWith(".") ? name.endsWith(base) : name === base || name.endsWith(`.${base}`));
/** Whether the names `name` stands for meet `base`: a wildcard `*.example.com` meets `www.example.com` too. */
const dnsMeets = (name: string, base: string): boolean => dnsWithin(name, base) || (name.startsWith("*.") && base.slice(base.indexOf(".")) === name.slice(1));

const ipWithin = (address: Uint8Array, base: { address: Uint8Array; mask: Uint8Array }): boolean =>
  address.length === base.address.length && address.every((byte, i) => ((byte ^ base.address[i]!) & base.mask[i]!) === 0);
const ipText = (address: Uint8Array): string =>
  address.length === 4 ? address.join(".") : Array.from({ length: address.length / 2 }, (_, i) => ((address[2 * i]! << 8) | address[2 * i + 1]!).toString(16)).join(":");

/**
 * Refuses the first of `names` that the permitted `bases` (when there are any) do not hold, or that meets an
 * excluded one.
 */
function checkWithin<N, B>(
  names: readonly N[],
  bases: { permitted: B[]; excluded: B[] },
  form: { within: (name: N, base: B) => boolean; meets: (name: N, base: B) => boolean; text: (name: N) => string },
  describe: string,
): void {
  for (const name of names) {
    if (bases.permitted.length > 0 && !bases.permitted.some((base) => form.within(name, base))) throw untrusted(`${describe} does not permit ${form.text(name)} (name constraints)`);
    if (bases.excluded.some((base) => form.meets(name, base))) throw untrusted(`${describe} excludes ${form.text(name)} (name constraints)`);
  }
}

/** Refuses a leaf whose `names` break a CA's `constraints`. */
export function checkNameConstraints(constraints: NameConstraints | undefined, names: LeafNames): void {
  if (!constraints) return;
  const { ca: describe, critical, permitted, excluded } = constraints;
  for (const subtree of [...permitted, ...excluded]) {
    if (subtree.type === "other" && (critical || names.tags.has(subtree.tag))) {
      throw untrusted(`${describe} constrains ${subtree.name} names, which are not checked here (name constraints)`);
    }
  }
  const of = <T extends Subtree["type"]>(type: T, list: Subtree[]) => list.filter((subtree): subtree is Extract<Subtree, { type: T }> => subtree.type === type);
  const dns = { within: dnsWithin, meets: dnsMeets, text: (name: string) => `the name ${name}` };
  checkWithin(names.dns, { permitted: of("dns", permitted).map((s) => s.name), excluded: of("dns", excluded).map((s) => s.name) }, dns, describe);
  const ip = { within: ipWithin, meets: ipWithin, text: (address: Uint8Array) => `the address ${ipText(address)}` };
  checkWithin(names.ips, { permitted: of("ip", permitted), excluded: of("ip", excluded) }, ip, describe);
}
