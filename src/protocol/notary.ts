/**
 * The wire types of the notary protocol, spoken between a prover (src/prover/notary/client.ts) and a notary
 * (src/app/notary.ts): valibot schemas, with the TypeScript types inferred from them. Both roles import
 * them from here, so the two sides cannot drift apart. Every mode has the same routes under its own paths
 * (`modeRoutes`); what a mode's session request and attestation request add is its own (mpc.ts, proxy-mode.ts):
 *
 *   POST   {session}                       the mode's session request → SessionCreated
 *   GET    {socket}?sessionId=             the mode's WebSocket: MPC's, or proxy mode's relay of raw TCP bytes
 *   POST   {session}/{id}/attestation      AttestationRequest and what the mode adds → the signed proof
 *                                          (src/proof/format.ts)
 *   GET    {session}/{id}                  SessionRunning (with its socket's traffic), or 404 unless it runs
 *   DELETE {session}/{id}                  204
 *   GET    /info                           NotaryInfo
 *   any failure                            ErrorReply
 *
 * MPC mode's paths are /session and /notarize, proxy mode's /proxy-session and /relay (provers of every version
 * call these); a mode added later has /modes/{mode}/session and /modes/{mode}/socket.
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import type { DeclaredRedaction } from "../proof/format.ts";
import { RedactionSpanSchema } from "../core/schema.ts";
import { requestIdSchema } from "../core/request-id.ts";
import { SessionTraffic } from "../core/session-traffic.ts";
import { CLAIM_SALT, MAX_CLAIM_LENGTH, MAX_CLAIMS, RECIPIENT } from "../claims/grammar.ts";

/** Where a mode's routes are: its sessions (created, asked about, attested, released) and its WebSocket. */
export interface ModeRoutes {
  session: string;
  socket: string;
}

const BUILT_IN_ROUTES: Record<string, ModeRoutes> = {
  mpc: { session: "/session", socket: "/notarize" },
  proxy: { session: "/proxy-session", socket: "/relay" },
};

/** The paths of a mode's routes: the built-in modes' as they always were, any other's under /modes/{mode}. */
export const modeRoutes = (mode: string): ModeRoutes =>
  BUILT_IN_ROUTES[mode] ?? { session: `/modes/${mode}/session`, socket: `/modes/${mode}/socket` };

/**
 * One end of a mode's socket, as bytes, however it is carried: a WebSocket's binary messages, or the embedded
 * notary's socket in its prover's process (src/notary/sockets.ts, `inProcessSocket`).
 */
export interface SocketEnd {
  /** False when the socket is closed: nothing was sent. */
  send(bytes: Uint8Array<ArrayBuffer>): boolean;
  close(): void;
}

/** What one end of a socket hears: the other end's bytes in order, then one close with its WebSocket code and reason. */
export interface SocketListener {
  bytes(bytes: Uint8Array): void;
  closed(code: number, reason: string): void;
}

/** Whether a notary offers a mode, by its /info (none yet: not known to offer any but MPC, which every notary offers). */
export function offersMode(info: NotaryInfo | undefined, mode: string): boolean {
  if (mode === "mpc") return true;
  if (info?.modes) return info.modes.includes(mode);
  return mode === "proxy" && info?.proxyMode === true;
}

/**
 * Why a mode cannot be had: none of the notaries asked (`where`) offers it. Proxy mode's refusal keeps its own code
 * and names the setting that turns it on.
 */
export function modeUnavailable(mode: string, where: string): AppError {
  if (mode === "proxy") {
    return new AppError("proxy_mode_unavailable", `proxy mode is unavailable: ${where} offer it (a notary's YAML config needs proxy: { enabled: true })`);
  }
  return new AppError("mode_unavailable", `the proof mode ${mode} is unavailable: ${where} offer it`);
}

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

/**
 * What the prover declares hidden, for the notary to sign with what it verified; and the claims the client asked
 * for (`T-CLAIM` entries in normal form, which the notary parses and judges itself), the salt of their commitments
 * and the recipient the proof is made for. Each is sent only when asked, so older notaries keep working without.
 */
export const AttestationRequest = v.strictObject({
  requestId: requestIdSchema("the request id must be a UUID"),
  redactions: v.pipe(v.array(DeclaredRedactionSchema), v.maxLength(MAX_REDACTIONS)),
  claims: v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(MAX_CLAIM_LENGTH))), v.maxLength(MAX_CLAIMS))),
  claimSalt: v.optional(v.pipe(v.string(), v.regex(CLAIM_SALT, "the claim salt must be 0x and 64 hex digits"))),
  recipient: v.optional(v.pipe(v.string(), v.regex(RECIPIENT, "the recipient must be 0x and 40 hex digits"))),
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
  /** The notary relays proxy-mode sessions; false for notaries without `proxy.enabled` and older ones. */
  proxyMode: v.optional(v.boolean(), false),
  /** Every mode the notary offers (`mpc` first); absent from notaries older than the list (offersMode). */
  modes: v.optional(v.array(v.string())),
});
export type NotaryInfo = v.InferOutput<typeof NotaryInfo>;

export const ErrorReply = v.object({ error: v.object({ code: v.string(), message: v.string() }) });
export type ErrorReply = v.InferOutput<typeof ErrorReply>;
