/**
 * Request headers that say who the end user is or where the call came from: a proxy in front of the prover
 * adds the client's address (X-Forwarded-For, X-Real-IP, Forwarded, a CDN's own), a browser adds the page's
 * origin and its fingerprintable client hints. The target would see them and, in the proof's revealed request,
 * so would everyone holding the proof. The prover drops them unless the operator names them in
 * PROVER_FORWARD_HEADERS (a target that needs `Origin`, say).
 */
export const IDENTIFYING_HEADERS: readonly string[] = [
  // Addresses added by proxies and load balancers.
  "forwarded", "via", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port",
  "x-forwarded-server", "x-forwarded-by", "x-original-forwarded-for", "x-real-ip", "x-client-ip",
  "x-cluster-client-ip", "client-ip", "true-client-ip",
  // CDNs' own names for the same.
  "cf-connecting-ip", "cf-connecting-ipv6", "cf-ipcountry", "cf-ray", "cf-visitor", "fastly-client-ip",
  "x-azure-clientip", "x-appengine-user-ip",
  // What a browser adds on its own: the calling page, and client hints about the browser and the device.
  "origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-user",
  "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform",
];

/** The identifying headers the prover drops: all of them less those PROVER_FORWARD_HEADERS names. */
export function droppedIdentifyingHeaders(forwarded: readonly string[]): ReadonlySet<string> {
  const keep = new Set(forwarded.map((name) => name.toLowerCase()));
  return new Set(IDENTIFYING_HEADERS.filter((name) => !keep.has(name)));
}
