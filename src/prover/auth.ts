import { createHash } from "node:crypto";
import { apiKeyMatcher } from "../core/api-key.ts";
import { AppError } from "../core/errors.ts";
import { errorResponse } from "../http/error-handling.ts";
import { routeGuard } from "../http/route-guard.ts";
import { type RouteAccess, alwaysNeedsKey } from "../http/route.ts";
import type { RouteAccessTable } from "./route-access.ts";

/** Who may read proofs from the message store. */
export interface ProofReadAccess {
  /** The stream every proof is published to. */
  proofStream: string;
  /** True: anyone may read it (PROVER_PUBLIC_PROOFS=1); false: reading it needs a key, as `/proof/{id}` does. */
  publicProofs: boolean;
}

/**
 * Whether a call needs an API key, by the access its route declares: routes that cost the operator something (MPC
 * sessions, proofs, storage) or hand out proofs. A store read needs one for the proofs stream, `stream` being
 * the id as the router decoded it for the route; a call of unknown access (no declared route answers it) needs one.
 */
export function needsApiKey(access: RouteAccess | undefined, method: string, stream: string | undefined, proofs: ProofReadAccess): boolean {
  if (access === undefined) return true;
  if (access !== "store") return alwaysNeedsKey(access, method);
  if (alwaysNeedsKey(access, method)) return true;
  return !proofs.publicProofs && stream === proofs.proofStream;
}

/** The API key in a request, or null when it carries none. */
export function presentedKey(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1]?.trim() ?? "";
}

/** How a key is remembered (with the request ids it made) and counted: its SHA-256, never the key itself. */
export const keyDigest = (key: string): string => createHash("sha256").update(key).digest("hex");

/** The prover's keys: full ones (PROVER_API_KEYS) and scoped ones (PROVER_API_KEYS_SCOPED). */
export interface ApiKeys {
  full: readonly string[];
  /** May call /proxy and read the proofs of the requests they made, nothing else. */
  scoped: readonly string[];
}

export const keysOn = (keys: ApiKeys): boolean => keys.full.length + keys.scoped.length > 0;

/** The digest of the request's API key when keys are on (the auth plugin has checked it), else undefined. */
export function callerKeyDigest(request: Request, keysAreOn: boolean): string | undefined {
  const key = keysAreOn ? presentedKey(request) : null;
  return key ? keyDigest(key) : undefined;
}

/** Who is calling, for per-client limits: the API key when keys are on, else the connection's address. */
export function callerOf(request: Request, keysAreOn: boolean, address: string | undefined): string {
  const digest = callerKeyDigest(request, keysAreOn);
  return digest ? `key ${digest}` : `address ${address ?? "unknown"}`;
}

/**
 * The digest a proof's request must have been made with for this caller to read it: the caller's own when its
 * key is scoped; undefined when it may read any proof.
 */
export function ownProofsOnly(keys: ApiKeys): (request: Request) => string | undefined {
  const isScoped = apiKeyMatcher(keys.scoped);
  return (request) => {
    const key = presentedKey(request);
    return key !== null && keys.scoped.length > 0 && isScoped(key) ? keyDigest(key) : undefined;
  };
}

/**
 * Elysia plugin: 401 without a key, 403 with a wrong one, on the calls `needsApiKey` names, judged on the route the
 * router matched (src/http/route-guard.ts); a scoped key gets 403 on every such call but those of routes declared
 * `key-or-scoped` (requests, and the proofs of its own, checked there).
 */
export function apiKeyAuth(keys: ApiKeys, proofs: ProofReadAccess, routes: Pick<RouteAccessTable, "routes" | "errorShapeOf">) {
  const isFull = apiKeyMatcher(keys.full);
  const isScoped = apiKeyMatcher(keys.scoped);
  return routeGuard(routes.routes, (request, route, params) => {
    const access = route?.access;
    if (!keysOn(keys) || !needsApiKey(access, request.method, route?.access === "store" ? params.id : undefined, proofs)) return;
    const shape = routes.errorShapeOf(new URL(request.url).pathname);
    const key = presentedKey(request);
    if (key === null) {
      return errorResponse(new AppError("unauthorized", "an API key is required: Authorization: Bearer <key>"), {
        shape,
        headers: { "www-authenticate": "Bearer" },
      });
    }
    // Both lists are checked whatever the answer, so the time taken does not tell which list a key is in.
    const full = isFull(key);
    const scoped = isScoped(key);
    if (full) return;
    if (!scoped) return errorResponse(new AppError("forbidden", "the API key is not valid"), { shape });
    if (access !== "key-or-scoped") {
      return errorResponse(new AppError("forbidden", "this API key may only call /proxy and read the proofs of its own requests"), { shape });
    }
  });
}
