/**
 * `cli notary start`'s run: the ledger, the server and the engine (started at the first MPC session), loaded only
 * when a notary starts.
 */
import { readFileSync } from "node:fs";
import { startNotaryServer } from "../app/notary.ts";
import { createLogger, type LogLevel } from "../base/log.ts";
import { AppError } from "../core/errors.ts";
import { LIBSECP256K1_BUILD } from "../core/secp256k1/libsecp256k1.ts";
import { testCaPoint, trustAnchors } from "../engine/trust-anchor.ts";
import { localVerifiers } from "../engine/verifier.ts";
import { loadNotaryConfig } from "../notary/config.ts";
import { openLedger } from "../notary/ledger.ts";
import { loadWhitelist } from "../notary/whitelist.ts";
import { decodePublicKeyPem, generateKey, publicKeyFingerprint, readPrivateKeyFile } from "../proof/keys.ts";
import { listening, untilSignalled } from "./serve.ts";

function readPem(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    throw new AppError("file_unreadable", `${what}: cannot read ${path}`);
  }
}

/** Runs the notary of the YAML config at `configPath` until a signal stops it. */
export async function startNotary(configPath: string): Promise<void> {
  const config = loadNotaryConfig(configPath, process.env);
  const log = createLogger({
    level: config.log.level.toLowerCase() as LogLevel,
    format: config.log.format === "JSON" ? "json" : "compact",
    fields: { component: "notary" },
  });
  const anchorPath = config.process.testTrustAnchorPath;
  const testTrustAnchorPem = anchorPath ? readPem(anchorPath, "TLSN_TEST_TRUST_ANCHOR") : undefined;
  // Checked now, before anything else is said: the engine that would refuse it starts only at the first MPC session.
  if (testTrustAnchorPem) testCaPoint(testTrustAnchorPem);
  const { privateKeyPath, signatureAlgorithm } = config.key;
  const key = privateKeyPath ? readPrivateKeyFile(privateKeyPath) : generateKey(signatureAlgorithm);
  if (!privateKeyPath) {
    log.warn("no notarization.private_key_path: using an ephemeral key; proofs will not verify after a restart");
  }
  if (testTrustAnchorPem) {
    log.warn("TEST TRUST ANCHOR IN USE: a test CA replaces a built-in root; everything signed now is flagged as a test proof");
  }
  const tls =
    config.tls.enabled && config.tls.certificatePath && config.tls.privateKeyPath
      ? { cert: readPem(config.tls.certificatePath, "tls.certificate_path"), key: readPem(config.tls.privateKeyPath, "tls.private_key_path") }
      : undefined;
  const whitelistPath = config.auth.enabled ? config.auth.whitelistPath : undefined;
  if (whitelistPath) loadWhitelist(whitelistPath); // fail at start-up, not at the first session
  // Opened before anything listens: a notary that cannot keep its ledger signs nothing.
  const ledger = await openLedger(config.ledger, publicKeyFingerprint(decodePublicKeyPem(key.publicKeyPem)));
  const server = await listening(`notary on ${config.listen.host}:${config.listen.port}`, () =>
    startNotaryServer({
      ...config.listen,
      sessions: config.sessions,
      // The engine starts at the first MPC session: a notary that only relays never loads it.
      verifiers: localVerifiers({ threads: config.process.threads, testTrustAnchorPem }),
      key,
      ledger,
      tls,
      auth: whitelistPath ? { whitelistPath } : undefined,
      testTrustAnchor: Boolean(testTrustAnchorPem),
      proxy: config.proxy ? { ...config.proxy, trustAnchorsPem: trustAnchors(testTrustAnchorPem) } : undefined,
      log,
    }),
  );
  const stopped = untilSignalled(log, () => server.stop(config.process.shutdownGraceMs));
  log.info("notary listening", { url: server.url, algorithm: key.algorithm, secp256k1: LIBSECP256K1_BUILD });
  await stopped;
}
