/**
 * Proxy mode's part of the notary protocol (notary.ts): its session request (the target the notary dials), its
 * relay WebSocket's close code, and what its attestation request adds (the keys the prover reveals).
 */
import * as v from "valibot";
import { AppError, isErrorCode } from "../core/errors.ts";
import { tlsServerNameSchema } from "../core/schema.ts";
import { revealedKeysSchema } from "../tls/revealed-keys.ts";
import { AttestationRequest } from "./notary.ts";

/**
 * A proxy session: the notary resolves `serverName` (under its own target policy) and connects to it. The name is
 * read as TLS names the host, a trailing dot dropped (src/core/server-name.ts): the relay's ClientHello and the
 * certificate must name it so, and the proof names it so.
 */
export const ProxySessionRequest = v.strictObject({
  serverName: v.pipe(v.string(), v.minLength(1), v.maxLength(253), tlsServerNameSchema("expected a host name without an empty label")),
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

/**
 * A proxy session's attestation: the keys the prover reveals (src/tls/revealed-keys.ts: the server's always; the
 * client's side when the request is to be revealed, in TLS 1.3 its epochs or traffic secrets, in TLS 1.2 the master
 * secret in place of the server's keys), and the redactions as in MPC mode. Whether the request enters the proof
 * follows from the keys alone: without the client's side it stays hidden whole (its length only).
 */
export const ProxyAttestationRequest = v.strictObject({
  ...AttestationRequest.entries,
  keys: revealedKeysSchema,
});
export type ProxyAttestationRequest = v.InferOutput<typeof ProxyAttestationRequest>;
