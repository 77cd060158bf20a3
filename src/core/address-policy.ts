import { isIP } from "node:net";

/**
 * Which addresses a prover or a notary may dial. Targets must be public: private, loopback, link-local, multicast,
 * unspecified, shared, documentation, relay and cloud-metadata ranges are refused, in IPv4 and IPv6.
 * IPv6 forms that carry an IPv4 address (mapped, translated, compatible, Teredo) are refused whole: a public
 * IPv4 target is dialled by its IPv4 address. NAT64 and 6to4 are judged by the IPv4 address they carry.
 */

const v4Blocked: [number, number][] = [
  [0x00000000, 8], // 0.0.0.0/8 "this network"
  [0x0a000000, 8], // 10/8
  [0x64400000, 10], // 100.64/10 shared (CGNAT)
  [0x7f000000, 8], // loopback
  [0xa9fe0000, 16], // 169.254/16 link-local, cloud metadata
  [0xac100000, 12], // 172.16/12
  [0xc0000000, 24], // 192.0.0/24 IETF protocol assignments
  [0xc0000200, 24], // 192.0.2/24 documentation
  [0xc0586300, 24], // 192.88.99/24 6to4 relay anycast (deprecated): reaches whichever relay is nearest
  [0xc0a80000, 16], // 192.168/16
  [0xc6120000, 15], // 198.18/15 benchmarking
  [0xc6336400, 24], // 198.51.100/24 documentation
  [0xcb007100, 24], // 203.0.113/24 documentation
  [0xe0000000, 4], // multicast
  [0xf0000000, 4], // reserved, broadcast
];

function v4ToInt(address: string): number {
  return address.split(".").reduce((n, part) => n * 256 + Number(part), 0);
}

function isBlockedV4(value: number): boolean {
  return v4Blocked.some(([base, bits]) => (value >>> (32 - bits)) === (base >>> (32 - bits)));
}

/** 16 bytes of an IPv6 address (with an embedded dotted IPv4 tail allowed). */
function v6Bytes(address: string): Uint8Array {
  const zone = address.indexOf("%");
  let text = zone >= 0 ? address.slice(0, zone) : address;
  const tailV4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tailV4?.[1]) {
    const n = v4ToInt(tailV4[1]);
    text = `${text.slice(0, -tailV4[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const headParts = head ? head.split(":") : [];
  const tailParts = tail ? tail.split(":") : [];
  const missing = 8 - headParts.length - tailParts.length;
  const groups = [...headParts, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...tailParts];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  return bytes;
}

function isBlockedV6(b: Uint8Array): boolean {
  const zeroBetween = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const zeroUpTo = (n: number) => zeroBetween(0, n);
  const embeddedV4 = () => ((b[12]! << 24) | (b[13]! << 16) | (b[14]! << 8) | b[15]!) >>> 0;
  if (zeroUpTo(16)) return true; // ::
  if (zeroUpTo(15) && b[15] === 1) return true; // ::1
  if (zeroUpTo(10) && b[10] === 0xff && b[11] === 0xff) return true; // ::ffff:0:0/96 IPv4-mapped
  if (zeroUpTo(8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) return true; // ::ffff:0:0:0/96 IPv4-translated
  if (zeroUpTo(12)) return true; // ::/96 IPv4-compatible (deprecated)
  if (b[0] === 0x01 && zeroBetween(1, 8)) return true; // 100::/64 discard-only
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    // 64:ff9b::/96, the well-known NAT64 prefix, carries an IPv4 address; the rest (64:ff9b:1::/48) is local use.
    return !zeroBetween(4, 12) || isBlockedV4(embeddedV4());
  }
  if (b[0] === 0x20 && b[1] === 0x01 && (b[2]! & 0xfe) === 0x00) return true; // 2001::/23 IETF assignments, Teredo 2001::/32 among them
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return true; // fe80::/10 link-local
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return true; // fec0::/10 site-local (deprecated)
  if ((b[0]! & 0xfe) === 0xfc) return true; // fc00::/7 unique local (includes fd00:ec2::254 metadata)
  if (b[0] === 0xff) return true; // multicast
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return true; // 2001:db8::/32 documentation
  if (b[0] === 0x20 && b[1] === 0x02) return isBlockedV4(((b[2]! << 24) | (b[3]! << 16) | (b[4]! << 8) | b[5]!) >>> 0); // 6to4
  return false;
}

/** True when the address may be dialled as a public target. Anything that is not an IP address is refused. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !isBlockedV4(v4ToInt(address));
  if (family === 6) return !isBlockedV6(v6Bytes(address));
  return false;
}
