/**
 * The wire types of the notary protocol, spoken between a prover (src/prover/notary/client.ts) and a notary
 * (src/app/notary.ts): valibot schemas, with the TypeScript types inferred from them. Both roles import
 * them from here, so the two sides cannot drift apart.
 *
 *   POST /session                 SessionRequest → SessionCreated
 *   GET  /notarize?sessionId=     the MPC WebSocket
 *   POST /session/{id}/attestation AttestationRequest → the signed proof (src/proof/format.ts)
 *   GET  /session/{id}            SessionRunning (with its socket's traffic), or 404 unless it runs
 *   DELETE /session/{id}          204
 *   GET  /info                    NotaryInfo
 *
 * Proxy mode (a notary that offers it says `proxyMode: true` in /info):
 *   POST /proxy-session                        ProxySessionRequest → SessionCreated (the notary has connected to the target)
 *   GET  /relay?sessionId=                     the WebSocket whose binary messages are the raw TCP bytes, both ways
 *                                              (closed with RELAY_ENDED_CLOSE_CODE when the notary ends it early)
 *   POST /proxy-session/{id}/attestation       ProxyAttestationRequest → the signed proof
 *   DELETE /proxy-session/{id}                 204
 *   any failure                   ErrorReply
 */
import * as v from "valibot";
import { AppError, isErrorCode } from "../errors.ts";
import { SessionSizes } from "../core/session-sizes.ts";
import type { DeclaredRedaction } from "../proof/format.ts";
import { RedactionSpanSchema } from "../core/transcript.ts";
import type { RevealedKeys } from "../tls/verify-session.ts";
import { requestIdSchema } from "../core/request-id.ts";
import { SessionTraffic } from "../core/session-traffic.ts";

/** `clientType` is what TLSNotary's clients send ("Websocket"); it is accepted and ignored. */
export const SessionRequest = v.strictObject({ clientType: v.optional(v.string()), ...SessionSizes.entries });
export type SessionRequest = v.InferOutput<typeof SessionRequest>;

export const SessionCreated = v.object({ sessionId: v.string() });
export type SessionCreated = v.InferOutput<typeof SessionCreated>;

export const SessionRunning = v.object({ sessionId: v.string(), state: v.literal("running"), traffic: v.optional(SessionTraffic) });
export type SessionRunning = v.InferOutput<typeof SessionRunning>;

/** Most redaction patterns one request may declare, and the longest pattern text. */
export const MAX_REDACTIONS = 256;
export const MAX_PATTERN_LENGTH = 1024;

const DeclaredRedactionSchema = v.strictObject({
  pattern: v.pipe(v.string(), v.maxLength(MAX_PATTERN_LENGTH)),
  spans: v.array(RedactionSpanSchema),
  matched: v.boolean(),
}) satisfies v.GenericSchema<unknown, DeclaredRedaction>;

/** What the prover declares hidden, for the notary to sign with what it verified. */
export const AttestationRequest = v.strictObject({
  requestId: requestIdSchema("the request id must be a UUID"),
  redactions: v.pipe(v.array(DeclaredRedactionSchema), v.maxLength(MAX_REDACTIONS)),
});
export type AttestationRequest = v.InferOutput<typeof AttestationRequest>;

/**
 * How long an attestation call may wait for the notary to finish verifying: the prover's client gives up
 * after it, and the notary keeps the connection open that long.
 */
export const ATTESTATION_WAIT_MS = 60_000;

/** A proxy session: the notary resolves `serverName` (under its own target policy) and connects to it. */
export const ProxySessionRequest = v.strictObject({
  serverName: v.pipe(v.string(), v.minLength(1), v.maxLength(253)),
  port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
});
export type ProxySessionRequest = v.InferOutput<typeof ProxySessionRequest>;

/**
 * The WebSocket close code of a relay the notary ended before its time (a limit, a refused first flight); its
 * close reason is `<error code>: <message>`, at most 123 bytes as WebSocket allows.
 */
export const RELAY_ENDED_CLOSE_CODE = 4000;
const CLOSE_REASON_BYTES = 123;

/** The close reason of a relay ended with `error`: its code and as much of its message as fits. */
export function relayEndedReason(error: AppError): string {
  const text = `${error.code}: ${error.message}`;
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= CLOSE_REASON_BYTES) return text;
  return new TextDecoder().decode(bytes.subarray(0, CLOSE_REASON_BYTES - 3)).replace(/\uFFFD$/, "") + "...";
}

/** The error a relay's close reason carries, or undefined when it carries none. */
export function relayEndedError(reason: string): AppError | undefined {
  const match = /^([a-z_]+): (.*)$/s.exec(reason);
  if (!match || !isErrorCode(match[1]!)) return undefined;
  return new AppError(match[1], `the notary ended the relay: ${match[2]}`);
}

const hexKey = v.pipe(v.string(), v.regex(/^[0-9a-f]{8,128}$/, "expected lower-case hex"));

/** The keys a prover reveals: the server's direction always, the client's only with the request revealed. */
export const RevealedKeysSchema = v.variant("version", [
  v.strictObject({
    version: v.literal("TLS1.3"),
    serverHandshakeTrafficSecret: hexKey,
    serverApplicationTrafficSecret: hexKey,
    clientHandshakeTrafficSecret: v.optional(hexKey),
    clientApplicationTrafficSecret: v.optional(hexKey),
  }),
  v.strictObject({
    version: v.literal("TLS1.2"),
    serverWriteKey: hexKey,
    serverWriteIv: hexKey,
    clientWriteKey: v.optional(hexKey),
    clientWriteIv: v.optional(hexKey),
  }),
]) satisfies v.GenericSchema<unknown, RevealedKeys>;

/**
 * A proxy session's attestation: the keys, and the redactions as in MPC mode. With `revealRequest` the
 * client keys come too and the request enters the proof; without, the request stays hidden whole (its length only).
 */
export const ProxyAttestationRequest = v.strictObject({
  ...AttestationRequest.entries,
  keys: RevealedKeysSchema,
  revealRequest: v.boolean(),
});
export type ProxyAttestationRequest = v.InferOutput<typeof ProxyAttestationRequest>;

export const NotaryInfo = v.object({
  version: v.string(),
  publicKey: v.string(),
  signatureAlgorithm: v.picklist(["secp256k1", "secp256r1"]),
  /** The address the notary's EVM attestations recover to; null for secp256r1 keys and notaries older than them. */
  ethereumAddress: v.optional(v.nullable(v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/))), null),
  testTrustAnchor: v.boolean(),
  /** The notary relays proxy-mode sessions; false for notaries without `proxy.enabled` and older ones. */
  proxyMode: v.optional(v.boolean(), false),
});
export type NotaryInfo = v.InferOutput<typeof NotaryInfo>;

export const ErrorReply = v.object({ error: v.object({ code: v.string(), message: v.string() }) });
export type ErrorReply = v.InferOutput<typeof ErrorReply>;
