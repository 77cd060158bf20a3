/** Proxy mode's own `/proxy` header (src/prover/proving/mode.ts, ModeHeaders): what the notary sees of the request. */
import { optionalWord } from "../call/headers.ts";
import type { ModeHeaders } from "../proving/mode.ts";

/**
 * `T-PROXY-REVEAL`: `none`: the notary sees nothing of the request (the proof's request is hidden whole); `request`:
 * all of it, its secrets included. Absent: the request is proven with its secrets kept from the notary where TLS
 * allows.
 */
export type ProxyReveal = "none" | "request";
const PROXY_REVEALS = ["none", "request"] as const satisfies readonly ProxyReveal[];

export const PROXY_MODE_HEADERS = {
  request: {
    "t-proxy-reveal": optionalWord(
      PROXY_REVEALS,
      "T-PROXY-REVEAL must be none or request",
      "proxy mode: none keeps the request hidden whole from the notary and the proof; request shows the notary all of it (secrets included); default: the request is proven with its secrets hidden (TLS 1.3), hidden whole on TLS 1.2",
    ),
  },
  answer: {},
} as const satisfies ModeHeaders;
