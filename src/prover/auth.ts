import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { apiKeyMatcher } from "../core/api-key.ts";
import { AppError } from "../core/errors.ts";
import { errorResponse } from "../core/http.ts";
import { type RouteAccess, alwaysNeedsKey } from "../http/route.ts";
import type { RouteAccessTable } from "./route-access.ts";

/** Who may read proofs from the message store. */
export interface ProofReadAccess {
  /** The stream every proof is published to. */
  proofStream: string;
  /** True: anyone may read it (PROVER_PUBLIC_PROOFS=1); false: reading it needs a key, as `/proof/{id}` does. */
  publicProofs: boolean;
}

/** The stream id of a `/stores/{id}/…` path as the store routes decode it; undefined for other paths. */
function storeStreamOf(pathname: string): string | undefined {
  const match = /^\/stores\/([^/]*)\//.exec(pathname);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1] ?? "");
  } catch {
    // Not decodable: the route refuses it anyway; asking for a key first reveals nothing.
    return "";
  }
}

/**
 * Whether a call needs an API key, by the access its route group was declared with: routes that cost the
 * operator something (MPC sessions, proofs, storage) or hand out proofs.
 */
export function needsApiKey(access: RouteAccess, method: string, pathname: string, proofs: ProofReadAccess): boolean {
  if (access !== "store") return alwaysNeedsKey(access, method);
  const stream = storeStreamOf(pathname);
  // Not a stream's path: no store route answers it.
  if (stream === undefined) return false;
  if (alwaysNeedsKey(access, method)) return true;
  return !proofs.publicProofs && (stream === proofs.proofStream || stream === "");
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
 * Elysia plugin: 401 without a key, 403 with a wrong one, on the calls `needsApiKey` names; a scoped key gets
 * 403 on every such route but those declared `key-or-scoped` (requests, and the proofs of its own, checked
 * there). It runs before routing, so that a wrong path behind a key is refused as the route would be.
 */
export function apiKeyAuth(keys: ApiKeys, proofs: ProofReadAccess, routes: Pick<RouteAccessTable, "accessOf" | "errorShapeOf">) {
  const isFull = apiKeyMatcher(keys.full);
  const isScoped = apiKeyMatcher(keys.scoped);
  return new Elysia({ name: "api-key-auth" }).onRequest(({ request }) => {
    const pathname = new URL(request.url).pathname;
    const access = routes.accessOf(pathname);
    if (!keysOn(keys) || !needsApiKey(access, request.method, pathname, proofs)) return;
    const shape = routes.errorShapeOf(pathname);
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
