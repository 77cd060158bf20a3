import { readFileSync } from "node:fs";
import { defineCommand } from "citty";
import { loadNotaryConfig } from "../notary/config.ts";
import { localVerifiers } from "../engine/verifier.ts";
import { startEngine } from "../engine/wasm.ts";
import { AppError } from "../core/errors.ts";
import { createLogger, type LogLevel } from "../base/log.ts";
import { startNotaryServer } from "../app/notary.ts";
import { trustAnchors } from "../engine/trust-anchor.ts";
import { loadWhitelist } from "../notary/whitelist.ts";
import { decodePublicKeyPem, generateKey, publicKeyFingerprint, readPrivateKeyFile } from "../proof/keys.ts";
import { openLedger } from "../notary/ledger.ts";
import * as v from "valibot";
import { describeIssue } from "../core/schema.ts";
import type { Proof } from "../proof/format.ts";
import { proofSchema } from "../proof/proof-schema.ts";
import { registryCalldata, registryCalls } from "../proof/registry-calldata.ts";
import { cliIo } from "./io.ts";
import { optionValues } from "./option-values.ts";
import { listening, untilSignalled } from "./serve.ts";
import keygen from "./keygen.ts";
import { LIBSECP256K1_BUILD } from "../core/secp256k1/libsecp256k1.ts";

function readPem(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    throw new AppError("file_unreadable", `${what}: cannot read ${path}`);
  }
}

const start = defineCommand({
  meta: { name: "start", description: "Start a notary server (YAML config in the shape of TLSNotary's notary-server)" },
  args: {
    config: { type: "string", valueHint: "file", required: true, description: "Path to notary.yaml" },
  },
  async run({ args }) {
    const config = loadNotaryConfig(args.config, process.env);
    const log = createLogger({
      level: config.log.level.toLowerCase() as LogLevel,
      format: config.log.format === "JSON" ? "json" : "compact",
      fields: { component: "notary" },
    });
    const { privateKeyPath, signatureAlgorithm } = config.key;
    const key = privateKeyPath ? readPrivateKeyFile(privateKeyPath) : generateKey(signatureAlgorithm);
    if (!privateKeyPath) {
      log.warn("no notarization.private_key_path: using an ephemeral key; proofs will not verify after a restart");
    }
    const anchorPath = config.process.testTrustAnchorPath;
    const testTrustAnchorPem = anchorPath ? readPem(anchorPath, "TLSN_TEST_TRUST_ANCHOR") : undefined;
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
    const engine = await startEngine({ threads: config.process.threads, testTrustAnchorPem });
    const server = await listening(`notary on ${config.listen.host}:${config.listen.port}`, () =>
      startNotaryServer({
        ...config.listen,
        sessions: config.sessions,
        verifiers: localVerifiers,
        key,
        ledger,
        tls,
        auth: whitelistPath ? { whitelistPath } : undefined,
        testTrustAnchor: engine.testTrustAnchor,
        proxy: config.proxy ? { ...config.proxy, trustAnchorsPem: trustAnchors(testTrustAnchorPem) } : undefined,
        log,
      }),
    );
    const stopped = untilSignalled(log, () => server.stop(config.process.shutdownGraceMs));
    log.info("notary listening", { url: server.url, algorithm: key.algorithm, secp256k1: LIBSECP256K1_BUILD });
    await stopped;
  },
});

/** Reads a proof file as the proof format says it is (its shape only: `slash` needs no notary key pinned). */
function proofFile(path: string): Proof {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new AppError("file_unreadable", `cannot read the proof ${path}: ${(error as Error).message}`);
  }
  const parsed = v.safeParse(proofSchema, value);
  if (!parsed.success) throw new AppError("proof_invalid", `${path}: ${describeIssue(parsed.issues[0], {})}`);
  return parsed.output;
}

const calldata = defineCommand({
  meta: {
    name: "calldata",
    description:
      "Print the calldata of a call to contracts/NotaryRegistry.sol, for any wallet or tool to send: register (send it from the notary's attestation address, /info's ethereumAddress, with the stake as value), exit, withdraw, or slash with two proofs of one notary's two different statements for one request id",
  },
  args: {
    call: { type: "positional", description: `one of ${registryCalls.join(", ")}`, required: true },
    proof: { type: "string", valueHint: "file", description: "slash: a proof file (give it twice)" },
  },
  async run({ args, rawArgs }) {
    const call = registryCalls.find((name) => name === args.call);
    if (!call) throw new AppError("usage", `the call must be one of ${registryCalls.join(", ")}`);
    const proofs = optionValues(rawArgs, "proof").map(proofFile);
    if (call !== "slash" && proofs.length > 0) throw new AppError("usage", `${call} takes no proof`);
    await cliIo().stdout.write(`${registryCalldata(call, proofs)}\n`);
  },
});

export default defineCommand({
  meta: { name: "notary", description: "The notary: the other party of MPC-TLS sessions, signing what it verified" },
  subCommands: { start, keygen, calldata },
});
