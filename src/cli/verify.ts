/**
 * `cli verify`: checks a proof offline against a pinned notary key, and optionally that it is the proof of
 * the request id, server, mode, method and URL the caller expects. A proof whose request is hidden whole is refused unless the
 * caller accepts one (--allow-hidden-request), and so is one made under a test trust anchor (--allow-test-anchor). No network, no wasm: nothing here may import src/engine.
 * Exit 0 valid, 1 invalid proof or not the expected one, 2 usage or unreadable input.
 */
import { readFileSync } from "node:fs";
import { defineCommand } from "citty";
import { AppError } from "../core/errors.ts";
import { jsonSafe } from "../base/terminal-text.ts";
import type { ProofMode } from "../proof/format.ts";
import { knownModes, modeFacts } from "../proof/modes.ts";
import { readPublicKeysFile } from "../proof/keys.ts";
import { quorumJson, renderQuorum, renderVerifiedProof, verifiedProofJson } from "../proof/render.ts";
import { isQuorumProofText, verifyQuorum } from "../proof/quorum.ts";
import { verifyProof } from "../proof/verify.ts";
import { notAProof } from "../proof/not-a-proof.ts";
import { parseClaims, RECIPIENT } from "../claims/grammar.ts";
import { cliIo } from "./io.ts";
import { optionValues } from "./option-values.ts";

async function readProofText(path: string): Promise<string> {
  try {
    return path === "-" ? await cliIo().readStdin() : readFileSync(path, "utf8");
  } catch (error) {
    throw new AppError("file_unreadable", `cannot read proof ${path === "-" ? "from stdin" : `file ${path}`}: ${(error as Error).message}`);
  }
}

/** A proof file's text, refused at once when it holds something else than a proof (notAProof says what). */
async function proofText(path: string): Promise<string> {
  const text = await readProofText(path);
  const holds = notAProof(text);
  if (holds) throw new AppError("proof_invalid", `${path === "-" ? "the input" : "the file"} holds ${holds}`);
  return text;
}

function quorumOf(value: unknown): number {
  const quorum = typeof value === "string" && /^[1-9][0-9]{0,2}$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(quorum)) throw new AppError("usage", "--quorum must be a whole number from 1");
  return quorum;
}

/** citty leaves a flag given without a value as "" or true; both are usage errors here. */
function requiredPath(value: unknown, flag: string): string {
  if (typeof value !== "string" || value === "") throw new AppError("usage", `--${flag} needs a file path`);
  return value;
}

/** An optional expectation: absent, or a non-empty value. */
function expectation(value: unknown, flag: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") throw new AppError("usage", `--${flag} needs a value`);
  return value.trim();
}

/** --mode: absent, or a mode this verifier knows (modes.ts). */
function expectedMode(value: unknown): ProofMode | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !modeFacts(value)) throw new AppError("usage", `--mode must be one of ${knownModes().join(", ")}`);
  return value;
}

/** --url: absent, or an https:// URL (its host, port, path and query are checked against the proof). */
function expectedUrl(value: unknown): string | undefined {
  const url = expectation(value, "url");
  if (url !== undefined && (!URL.canParse(url) || new URL(url).protocol !== "https:")) throw new AppError("usage", "--url must be an https:// URL");
  return url;
}

/** --expect-claim entries, read as T-CLAIM entries before the proof is: a malformed one is a usage error. */
function expectedClaims(values: readonly string[]): string[] {
  values.forEach((value, index) => {
    try {
      parseClaims(value);
    } catch (error) {
      if (error instanceof AppError) throw new AppError("usage", `--expect-claim ${index + 1}: ${error.message.replace(/^T-CLAIM /, "")}`);
      throw error;
    }
  });
  return [...values];
}

function expectedRecipient(value: unknown): string | undefined {
  const address = expectation(value, "expect-recipient");
  if (address !== undefined && !RECIPIENT.test(address)) throw new AppError("usage", "--expect-recipient must be an Ethereum address: 0x and 40 hex digits");
  return address;
}

export default defineCommand({
  meta: { name: "verify", description: "Verify a proof offline against the notary's public key" },
  args: {
    "notary-pub-key": {
      type: "string",
      valueHint: "file",
      required: true,
      description: "The notary's public key (PEM file, from `cli notary keygen`); with several notaries, one file holding all their keys (valid if one of them signed)",
    },
    proof: { type: "string", valueHint: "file", required: true, description: "The proof file (a quorum proof too), or - for stdin (with --quorum: one per proof or quorum proof, repeated)" },
    quorum: {
      type: "string",
      description: "Verify the --proof files as a quorum: at least this many, by distinct notaries of --notary-pub-key, of one request, stating the same claims (a quorum proof: at least its own size without it)",
    },
    "request-id": { type: "string", description: "Fail unless the proof is of this request id (compared case-blind)" },
    "server-name": { type: "string", description: "Fail unless the proof is of this server name (compared case-blind)" },
    mode: { type: "string", description: "Fail unless the notary took part in this mode: mpc or proxy" },
    method: { type: "string", description: "Fail unless the proof's request shows this method (GET, POST, ...)" },
    url: {
      type: "string",
      description: "Fail unless the proof is of this https:// URL: its host the server name and the request's Host, its port the one dialled, its path and query the request's",
    },
    "allow-hidden-request": {
      type: "boolean",
      default: false,
      description: "Accept a proof whose request is hidden (proxy mode): it does not show the method, URL, Host or port the answer answers",
    },
    "allow-test-anchor": {
      type: "boolean",
      default: false,
      description: "Accept a proof made under a TEST trust anchor (TLSN_TEST_TRUST_ANCHOR): it proves nothing about the public web",
    },
    "expect-claim": {
      type: "string",
      description: "Fail (proof_mismatch) unless the proof states this T-CLAIM entry: a comparison as holding, a value or commit: as stated (repeat for more)",
    },
    "expect-recipient": { type: "string", description: "Fail unless the proof was made for this Ethereum address (T-RECIPIENT)" },
    json: { type: "boolean", default: false, description: "Print the verified content as JSON" },
  },
  async run({ args, rawArgs }) {
    const pinned = readPublicKeysFile(requiredPath(args["notary-pub-key"], "notary-pub-key"));
    const expected = {
      requestId: expectation(args["request-id"], "request-id"),
      serverName: expectation(args["server-name"], "server-name"),
      mode: expectedMode(args.mode),
      method: expectation(args.method, "method")?.toUpperCase(),
      url: expectedUrl(args.url),
      allowHiddenRequest: args["allow-hidden-request"] === true,
      allowTestTrustAnchor: args["allow-test-anchor"] === true,
      claims: expectedClaims(optionValues(rawArgs, "expect-claim")),
      recipient: expectedRecipient(args["expect-recipient"]),
    };
    const paths = optionValues(rawArgs, "proof");
    if (paths.length > 1 && args.quorum === undefined) throw new AppError("usage", "--proof is given once, unless --quorum says how many of the proofs must agree");
    const texts = await Promise.all(paths.map((path) => proofText(requiredPath(path, "proof"))));
    // A quorum proof (a prover's T-QUORUM) is verified as a quorum, at least of its own size, --quorum or not.
    if (args.quorum !== undefined || (texts.length === 1 && isQuorumProofText(texts[0]!))) {
      const quorum = verifyQuorum(texts, pinned, args.quorum === undefined ? undefined : quorumOf(args.quorum), expected);
      await cliIo().stdout.write(args.json ? `${jsonSafe(JSON.stringify(quorumJson(quorum), null, 2))}\n` : renderQuorum(quorum));
      return;
    }
    const verified = verifyProof(texts[0]!, pinned, expected);
    await cliIo().stdout.write(args.json ? `${jsonSafe(JSON.stringify(verifiedProofJson(verified), null, 2))}\n` : renderVerifiedProof(verified));
  },
});
