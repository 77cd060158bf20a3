/**
 * MPC mode's check of a target before any MPC work: the engine speaks only TLS 1.2 with ECDHE P-256 and AES-128-GCM,
 * and trusts only its roots (and a test anchor), but finds out otherwise only after seconds of MPC. A plain
 * handshake offering exactly that suite, checking the chain against the same anchors and the certificate against
 * the host name, answers in one round trip. Answers are remembered per address for a while, so a target is probed
 * rarely.
 */
import { checkServerIdentity, connect, type PeerCertificate } from "node:tls";
import { timedMemory } from "../../base/timed-memory.ts";
import { AppError } from "../../core/errors.ts";
import { certificateNotTrusted } from "../../engine/session.ts";

/**
 * `untrusted` carries why, in the words of the engine's own refusal; `closed`: nothing accepted the connection, as the
 * engine's would not be (an MPC setup spent on it is seconds of CPU for the same refusal).
 */
export type ProbeResult = { result: "fits" } | { result: "refused" } | { result: "untrusted"; reason: string } | { result: "closed" } | { result: "unknown" };

/** The engine's offer, as OpenSSL names it. */
const ENGINE_SUITES = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256";
const REMEMBER_FITS_MS = 10 * 60_000;
const REMEMBER_REFUSED_MS = 60_000;
const PROBE_TIMEOUT_MS = 3_000;
/** Targets remembered at most; past it the memory starts afresh. */
const REMEMBERED_TARGETS = 4096;

/** OpenSSL's verification codes, in the words the engine's refusals use (src/engine/session.ts). */
function chainReason(code: string | undefined, serverName: string): string {
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return `it is not valid for ${serverName}`;
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") return "it is outside its validity period";
  if (code !== undefined && /ISSUER|SELF_SIGNED|LEAF_SIGNATURE|SIGNATURE_FAILURE|CHAIN/.test(code)) return "its chain does not end in a trusted root";
  return `it was refused (${code ?? "unknown reason"})`;
}

/**
 * Why a handshake's certificate is not one the engine accepts for `serverName`, or undefined. `error` is the socket's
 * authorizationError: an Error with a code in Node, the code itself in Bun (whose check covers the host name too).
 */
function certificateProblem(authorized: boolean, error: string | (Error & { code?: string }) | null, serverName: string, certificate: PeerCertificate): string | undefined {
  if (!authorized) return chainReason(typeof error === "string" ? error : (error?.code ?? error?.message), serverName);
  return checkServerIdentity(serverName, certificate) ? `it is not valid for ${serverName}` : undefined;
}

/**
 * A handshake with the engine's offer. "refused" only when the server answered it with a TLS alert (it speaks TLS,
 * not this); "untrusted" when its certificate fails the check against `trustAnchorsPem`; "closed" when the connection
 * itself was refused; anything else (timeouts, resets) is "unknown" and left to the MPC session to report.
 */
export function probeEngineSuite(address: string, port: number, serverName: string, trustAnchorsPem: readonly string[]): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = connect({
      host: address,
      port,
      servername: serverName,
      minVersion: "TLSv1.2",
      maxVersion: "TLSv1.2",
      ciphers: ENGINE_SUITES,
      ecdhCurve: "P-256",
      ca: [...trustAnchorsPem],
      // Judged below, where the refusal can be named: a rejected handshake says only that it was.
      rejectUnauthorized: false,
    });
    const done = (result: ProbeResult) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done({ result: "unknown" }));
    socket.once("secureConnect", () => {
      const error = socket.authorizationError as unknown as string | (Error & { code?: string }) | null;
      const problem = certificateProblem(socket.authorized, error, serverName, socket.getPeerCertificate());
      done(problem === undefined ? { result: "fits" } : { result: "untrusted", reason: problem });
    });
    socket.once("error", (error: Error & { code?: string }) => {
      if (error.code === "ECONNREFUSED") return done({ result: "closed" });
      done({ result: /ALERT|VERSION|NO_SHARED_CIPHER|HANDSHAKE_FAILURE/i.test(`${error.code} ${error.message}`) ? "refused" : "unknown" });
    });
  });
}

export interface EngineSuiteCheck {
  /**
   * Throws tls_unsupported, naming proxy mode, when the target is known not to speak the engine's suite,
   * tls_untrusted when its certificate is not one the engine would accept, and target_unreachable when it refused
   * the connection.
   */
  check(target: { address: string; port: number; serverName: string }): Promise<void>;
}

type Probe = (address: string, port: number, serverName: string) => Promise<ProbeResult>;

/** The check over `trustAnchorsPem`, the anchors the engine trusts (src/engine/trust-anchor.ts). */
export function engineSuiteCheck(trustAnchorsPem: readonly string[], probe: Probe = (address, port, serverName) => probeEngineSuite(address, port, serverName, trustAnchorsPem)): EngineSuiteCheck {
  const known = timedMemory<ProbeResult>(REMEMBERED_TARGETS);
  return {
    async check({ address, port, serverName }) {
      const key = `${serverName}|${address}|${port}`;
      let probed = known.get(key);
      if (probed === undefined) {
        probed = await probe(address, port, serverName);
        // A closed port may open the next moment: asked again each time, as an unknown answer is.
        if (probed.result !== "unknown" && probed.result !== "closed") known.set(key, probed, probed.result === "fits" ? REMEMBER_FITS_MS : REMEMBER_REFUSED_MS);
      }
      if (probed.result === "closed") throw new AppError("target_unreachable", "the target refused the connection");
      if (probed.result === "untrusted") throw certificateNotTrusted(probed.reason);
      if (probed.result === "refused") {
        throw new AppError(
          "tls_unsupported",
          "the target does not offer TLS 1.2 with ECDHE P-256 and AES-128-GCM, the one cipher suite of MPC mode; proxy mode (T-PROOF-MODE: proxy) proves TLS 1.3 and every AEAD suite",
        );
      }
    },
  };
}
