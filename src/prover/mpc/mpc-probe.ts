/**
 * MPC mode's one cipher suite, checked before any MPC work: the engine speaks only TLS 1.2 with ECDHE P-256
 * and AES-128-GCM, and finds out otherwise only after seconds of MPC. A plain handshake offering exactly that
 * answers in one round trip. Answers are remembered per address for a while, so a target is probed rarely.
 */
import { connect } from "node:tls";
import { timedMemory } from "../../core/timed-memory.ts";
import { AppError } from "../../core/errors.ts";

export type ProbeResult = "fits" | "refused" | "unknown";

/** The engine's offer, as OpenSSL names it. */
const ENGINE_SUITES = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256";
const REMEMBER_FITS_MS = 10 * 60_000;
const REMEMBER_REFUSED_MS = 60_000;
const PROBE_TIMEOUT_MS = 3_000;
/** Targets remembered at most; past it the memory starts afresh. */
const REMEMBERED_TARGETS = 4096;

/**
 * A handshake with the engine's offer. "refused" only when the server answered it with a TLS alert (it
 * speaks TLS, not this); anything else (timeouts, resets) is "unknown" and left to the MPC session to report.
 */
export function probeEngineSuite(address: string, port: number, serverName: string): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = connect({
      host: address,
      port,
      servername: serverName,
      minVersion: "TLSv1.2",
      maxVersion: "TLSv1.2",
      ciphers: ENGINE_SUITES,
      ecdhCurve: "P-256",
      // Only the version and suite are probed: the MPC session checks the certificate itself.
      rejectUnauthorized: false,
    });
    const done = (result: ProbeResult) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done("unknown"));
    socket.once("secureConnect", () => done("fits"));
    socket.once("error", (error: Error & { code?: string }) => done(/ALERT|VERSION|NO_SHARED_CIPHER|HANDSHAKE_FAILURE/i.test(`${error.code} ${error.message}`) ? "refused" : "unknown"));
  });
}

export interface EngineSuiteCheck {
  /** Throws tls_unsupported, naming proxy mode, when the target is known not to speak the engine's suite. */
  check(target: { address: string; port: number; serverName: string }): Promise<void>;
}

export function engineSuiteCheck(probe = probeEngineSuite): EngineSuiteCheck {
  const known = timedMemory<ProbeResult>(REMEMBERED_TARGETS);
  return {
    async check({ address, port, serverName }) {
      const key = `${serverName}|${address}|${port}`;
      let result = known.get(key);
      if (result === undefined) {
        result = await probe(address, port, serverName);
        if (result !== "unknown") known.set(key, result, result === "fits" ? REMEMBER_FITS_MS : REMEMBER_REFUSED_MS);
      }
      if (result === "refused") {
        throw new AppError(
          "tls_unsupported",
          "the target does not offer TLS 1.2 with ECDHE P-256 and AES-128-GCM, the one cipher suite of MPC mode; proxy mode (T-PROOF-MODE: proxy) proves TLS 1.3 and every AEAD suite",
        );
      }
    },
  };
}
