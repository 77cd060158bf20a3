/**
 * The wire types of the notary protocol, spoken between a prover (src/prover/notary-client.ts) and a notary
 * (src/notary/server.ts): valibot schemas, with the TypeScript types inferred from them. Both roles import
 * them from here, so the two sides cannot drift apart.
 *
 *   POST /session                 SessionRequest → SessionCreated
 *   GET  /notarize?sessionId=     the MPC WebSocket
 *   POST /session/{id}/attestation AttestationRequest → the signed proof (src/proof/format.ts)
 *   GET  /session/{id}            SessionRunning, or 404 once the session is over
 *   DELETE /session/{id}          204
 *   GET  /info                    NotaryInfo
 *   any failure                   ErrorReply
 */
import * as v from "valibot";
import type { DeclaredRedaction, RedactionSpan } from "../proof/format.ts";
import { nonNegativeInteger, requestIdSchema, strictMapping } from "../schema.ts";

const byteCount = v.pipe(v.number("expected a positive integer"), v.safeInteger("expected a positive integer"), v.minValue(1, "expected a positive integer"));

/** Bytes an MPC session can carry: the request sent and the response received, headers included. */
export const SessionSizes = v.object({ maxSentData: byteCount, maxRecvData: byteCount });
export type SessionSizes = v.InferOutput<typeof SessionSizes>;

/** `clientType` is what TLSNotary's clients send ("Websocket"); it is accepted and ignored. */
export const SessionRequest = v.strictObject({ clientType: v.optional(v.string()), ...SessionSizes.entries });
export type SessionRequest = v.InferOutput<typeof SessionRequest>;

export const SessionCreated = v.object({ sessionId: v.string() });
export type SessionCreated = v.InferOutput<typeof SessionCreated>;

export const SessionRunning = v.object({ sessionId: v.string(), state: v.literal("running") });
export type SessionRunning = v.InferOutput<typeof SessionRunning>;

/** A hidden byte range [start, end) of one transcript direction; proofs list the same spans. */
export const RedactionSpanSchema = strictMapping(
  {
    direction: v.picklist(["sent", "recv"], 'expected one of "sent", "recv"'),
    start: nonNegativeInteger(),
    end: nonNegativeInteger(),
  },
  "expected an object",
) satisfies v.GenericSchema<unknown, RedactionSpan>;

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

export const NotaryInfo = v.object({
  version: v.string(),
  publicKey: v.string(),
  signatureAlgorithm: v.picklist(["secp256k1", "secp256r1"]),
  /** The address the notary's EVM attestations recover to; null for secp256r1 keys and notaries older than them. */
  ethereumAddress: v.optional(v.nullable(v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/))), null),
  testTrustAnchor: v.boolean(),
});
export type NotaryInfo = v.InferOutput<typeof NotaryInfo>;

export const ErrorReply = v.object({ error: v.object({ code: v.string(), message: v.string() }) });
export type ErrorReply = v.InferOutput<typeof ErrorReply>;
