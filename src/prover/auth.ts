import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { errorResponse } from "../http.ts";

/** Routes that cost the operator something (MPC sessions, proofs, storage) and so need an API key. */
export function requiresApiKey(method: string, pathname: string): boolean {
  if (pathname === "/proxy" || pathname.startsWith("/proof/") || pathname === "/pool") return true;
  return method.toUpperCase() === "POST" && pathname.startsWith("/stores/");
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * Checks `Authorization: Bearer <key>` against the configured keys. Both sides are hashed first so that
 * timingSafeEqual compares equal lengths and the time taken says nothing about the key.
 */
export function apiKeyMatcher(keys: readonly string[]): (presented: string) => boolean {
  const expected = keys.map(digest);
  return (presented) => {
    const given = digest(presented);
    // Every key is compared, so the position of a match does not show in the timing either.
    return expected.reduce((found, key) => timingSafeEqual(key, given) || found, false);
  };
}

/** The API key in a request, or null when it carries none. */
function presentedKey(request: Request): string | null {
  const header = request.headers.get("authorization");
  if (header === null) return null;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1]?.trim() ?? "";
}

/** Elysia plugin: 401 without a key, 403 with a wrong one, on the routes `requiresApiKey` names. */
export function apiKeyAuth(keys: readonly string[]) {
  const matches = apiKeyMatcher(keys);
  return new Elysia({ name: "api-key-auth" }).onRequest(({ request }) => {
    if (keys.length === 0 || !requiresApiKey(request.method, new URL(request.url).pathname)) return;
    const key = presentedKey(request);
    if (key === null) {
      return errorResponse(new AppError("unauthorized", "an API key is required: Authorization: Bearer <key>"), {
        "www-authenticate": "Bearer",
      });
    }
    if (!matches(key)) return errorResponse(new AppError("forbidden", "the API key is not valid"));
  });
}
