/**
 * The environment an engine host starts with. A host runs wasm for MPC sessions and needs nothing of the
 * prover's configuration (its settings arrive over IPC), so it gets what the runtime and the system libraries
 * read, and no store URL, API key or other secret: a host compromised through the engine finds none there.
 */
const PASSED = new Set([
  "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ",
  // The engine dials a remote notary (wss://) itself: the CAs it may trust for that are trust settings, not secrets.
  "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
]);
/** The Bun runtime's own settings (e.g. BUN_JSC_* memory tuning) keep applying to hosts too. */
const PASSED_PREFIX = "BUN_";

export function engineHostEnv(env: Record<string, string | undefined>): Record<string, string> {
  const passed: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (PASSED.has(name) || name.startsWith(PASSED_PREFIX))) passed[name] = value;
  }
  return passed;
}
