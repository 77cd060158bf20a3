/** Verified transcripts of the proof fixtures' exchange (test/proof/fixtures.ts), as each mode's verify returns them. */
import type { SeenDirection, VerifiedTranscript } from "../../../src/notary/verified-transcript.ts";
import { REQUEST, RESPONSE } from "../../proof/fixtures.ts";

/** A direction the notary saw whole. */
export const whole = (text: string): SeenDirection => {
  const bytes = new TextEncoder().encode(text);
  return { length: bytes.length, bytes, seen: [{ start: 0, end: bytes.length }] };
};

/** Proxy mode, the request hidden whole (no client keys), the answer whole, the server's close seen. */
export const proxyTranscript = (change: Partial<VerifiedTranscript> = {}): VerifiedTranscript => ({
  mode: "proxy",
  serverName: "api.example.com",
  serverPort: 443,
  tlsVersion: "TLS1.3",
  connectionTime: 1_717_171_717,
  responseTime: 1_717_171_718,
  sent: { length: REQUEST.length, bytes: null, seen: [] },
  recv: whole(RESPONSE),
  hiddenBy: "notary",
  connectionEnd: { closed: true },
  alpn: "http/1.1",
  ...change,
});

/** MPC mode: the request revealed, no port, no ALPN, the connection's end unseen. */
export const mpcTranscript = (change: Partial<VerifiedTranscript> = {}): VerifiedTranscript =>
  proxyTranscript({ mode: "mpc", serverPort: undefined, alpn: undefined, sent: whole(REQUEST), hiddenBy: "prover", connectionEnd: { closed: false, why: "an MPC notary does not see how the connection ended" }, ...change });
