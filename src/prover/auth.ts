import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import { apiKeyMatcher } from "../api-key.ts";
import { AppError } from "../errors.ts";
import { errorResponse } from "../http.ts";

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
 * Routes that cost the operator something (MPC sessions, proofs, storage) or hand out proofs, and so need
 * an API key.
 */
export function requiresApiKey(method: string, pathname: string, proofs: ProofReadAccess): boolean {
  if (pathname === "/proxy" || pathname.startsWith("/proof/") || pathname === "/metrics") return true;
  // The warm pool's state and its run-time requests (sessions cost memory and CPU).
  if (pathname === "/pool" || pathname.startsWith("/pool/") || pathname === "/pools" || pathname === "/prepare") return true;
  const stream = storeStreamOf(pathname);
  if (stream === undefined) return false;
  if (method.toUpperCase() === "POST") return true;
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

/**
 * Who is calling, for per-client limits: the API key when keys are on (the auth plugin has checked it), else
 * the connection's address.
 */
export function callerOf(request: Request, keysOn: boolean, address: string | undefined): string {
  const key = keysOn ? presentedKey(request) : null;
  return key ? `key ${keyDigest(key)}` : `address ${address ?? "unknown"}`;
}

/** Elysia plugin: 401 without a key, 403 with a wrong one, on the routes `requiresApiKey` names. */
export function apiKeyAuth(keys: readonly string[], proofs: ProofReadAccess) {
  const matches = apiKeyMatcher(keys);
  return new Elysia({ name: "api-key-auth" }).onRequest(({ request }) => {
    const pathname = new URL(request.url).pathname;
    if (keys.length === 0 || !requiresApiKey(request.method, pathname, proofs)) return;
    const key = presentedKey(request);
    if (key === null) {
      return errorResponse(new AppError("unauthorized", "an API key is required: Authorization: Bearer <key>"), {
        pathname,
        headers: { "www-authenticate": "Bearer" },
      });
    }
    if (!matches(key)) return errorResponse(new AppError("forbidden", "the API key is not valid"), { pathname });
  });
}
