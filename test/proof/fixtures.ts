/**
 * Realistic proof bodies for tests: a small HTTP exchange where the prover hid its API key header
 * and a session token in the response, signed with a freshly generated key.
 */
import { join, resolve } from "node:path";
import type { CommandDef } from "citty";
import { runCli } from "../../src/cli/run.ts";
import { runInProcess } from "../../testkit/cli-in-process.ts";
import type { ProofBody, RevealedRange, SignatureAlgorithm, TranscriptDirection } from "../../src/proof/format.ts";
import { generateKey, type NotaryKey } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";

export const SECRET_API_KEY = "sk_live_9f8e7d6c5b4a";
export const SECRET_TOKEN = "tok_SECRET_abc123";

export const REQUEST =
  "GET /v1/balance HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer " + SECRET_API_KEY + "\r\nAccept: */*\r\n\r\n";
export const RESPONSE =
  'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 61\r\n\r\n{"balance":1234,"currency":"EUR","token":"' + SECRET_TOKEN + '"}';

const bytes = (text: string): Buffer => Buffer.from(text, "utf8");

/** Byte span of the first occurrence of `needle` in `haystack`. */
export function spanOf(haystack: string, needle: string): { start: number; end: number } {
  const start = bytes(haystack).indexOf(bytes(needle));
  if (start < 0) throw new Error(`fixture: ${needle} not in transcript`);
  return { start, end: start + bytes(needle).length };
}

/** The direction with everything revealed except `hidden` spans (sorted, disjoint). */
export function directionHiding(text: string, hidden: { start: number; end: number }[]): TranscriptDirection {
  const all = bytes(text);
  const revealed: RevealedRange[] = [];
  let position = 0;
  for (const span of [...hidden, { start: all.length, end: all.length }]) {
    if (span.start > position) revealed.push({ start: position, end: span.start, data: all.subarray(position, span.start).toString("base64") });
    position = span.end;
  }
  return { length: all.length, revealed };
}

export function sampleBody(key: NotaryKey): ProofBody {
  const apiKey = spanOf(REQUEST, SECRET_API_KEY);
  const token = spanOf(RESPONSE, SECRET_TOKEN);
  return {
    requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01",
    notary: { publicKey: key.publicKeyPem, algorithm: key.algorithm },
    mode: "mpc",
    serverName: "api.example.com",
    connectionTime: 1_717_171_717,
    responseTime: 1_717_171_718,
    responseFraming: "content-length",
    request: "revealed",
    tlsVersion: "TLS1.2",
    notarizedAt: 1_717_171_720_123,
    transcript: { sent: directionHiding(REQUEST, [apiKey]), recv: directionHiding(RESPONSE, [token]) },
    redactions: [
      { pattern: "header:authorization", spans: [{ direction: "sent", ...apiKey }], matched: true },
      { pattern: "json:token", spans: [{ direction: "recv", ...token }], matched: true },
      { pattern: "header:x-absent", spans: [], matched: false },
    ],
    testTrustAnchor: false,
    notaryVersion: "0.1.0",
    claims: [{ kind: "value", subject: "res:body:currency", value: '"EUR"' }],
  };
}

/** The sample as a notary signed it before claims: no claims, no recipient. */
export function preClaimsSampleBody(key: NotaryKey): ProofBody {
  const { claims: _claims, ...body } = sampleBody(key);
  return body;
}

/** The sample as a notary signed it before answers were checked: no mode, times of the exchange or request visibility. */
export function legacySampleBody(key: NotaryKey): ProofBody {
  const { mode: _mode, responseTime: _responseTime, responseFraming: _framing, request: _request, ...legacy } = preClaimsSampleBody(key);
  return legacy;
}

/** The sample as a proxy-mode notary signs it when the request stays hidden: the request's length only. */
export function hiddenRequestBody(key: NotaryKey): ProofBody {
  const body = sampleBody(key);
  const token = spanOf(RESPONSE, SECRET_TOKEN);
  return {
    ...body,
    mode: "proxy",
    serverPort: 443,
    request: "hidden",
    transcript: { sent: { length: body.transcript.sent.length, revealed: [] }, recv: body.transcript.recv },
    redactions: [{ pattern: "json:token", spans: [{ direction: "recv", ...token }], matched: true }],
  };
}

export function signedSample(algorithm: SignatureAlgorithm = "secp256k1") {
  const key = generateKey(algorithm);
  return { key, proof: signProof(sampleBody(key), key) };
}

export { tempDir } from "../../testkit/env.ts";

export const REPO = resolve(import.meta.dir, "../..");

/** Runs a citty command module through the real runCli in this process (testkit/cli-in-process.ts). */
export async function runCommandModule(modulePath: string, args: string[], stdin?: string) {
  const command = (await import(join(REPO, modulePath))).default as CommandDef;
  return runInProcess((io) => runCli(command, args, io), stdin);
}
