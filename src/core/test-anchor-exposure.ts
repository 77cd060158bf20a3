/**
 * A test trust anchor makes a process sign proofs of servers whose certificates anyone holding the test CA's key
 * can make. It is for a machine's own tests: a prover or notary reachable beyond loopback, or serving TLS (which
 * only makes sense for others to reach it), refuses one unless its operator says so with TLSN_TEST_TRUST_ANCHOR_EXPOSED=1.
 * A shell that once ran `eval "$(cli testca …)"` would otherwise make every later start a test node with one WARN line.
 */
import { isIP } from "node:net";
import { AppError } from "./errors.ts";

/** The variable that allows it anyway. */
export const EXPOSED_TEST_ANCHOR_VARIABLE = "TLSN_TEST_TRUST_ANCHOR_EXPOSED";

/** True for a listening address only this machine reaches: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost" || bare.endsWith(".localhost")) return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return bare === "::1" || bare === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(bare);
  return false;
}

export interface AnchorExposure {
  /** The node's role, for the message: "prover" or "notary". */
  role: string;
  /** Where it listens, and the setting that says so. */
  host: string;
  hostSetting: string;
  /** True when it serves TLS. */
  tls?: boolean;
  /** TLSN_TEST_TRUST_ANCHOR, when set. */
  testTrustAnchorPath: string | undefined;
  /** TLSN_TEST_TRUST_ANCHOR_EXPOSED=1. */
  allowed: boolean;
}

/** Refuses (config_invalid) a test anchor on a node others can reach, unless allowed explicitly. */
export function refuseExposedTestAnchor({ role, host, hostSetting, tls = false, testTrustAnchorPath, allowed }: AnchorExposure): void {
  if (testTrustAnchorPath === undefined || allowed) return;
  const exposure = !isLoopbackHost(host) ? `listens on ${host} (${hostSetting}), beyond loopback` : tls ? "serves TLS" : undefined;
  if (exposure === undefined) return;
  throw new AppError(
    "config_invalid",
    `TLSN_TEST_TRUST_ANCHOR is set but this ${role} ${exposure}: its proofs would rest on a test CA; unset it, or set ${EXPOSED_TEST_ANCHOR_VARIABLE}=1 if this is a test deployment`,
  );
}
