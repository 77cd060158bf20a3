/**
 * The notary's refusals decided from the request line and headers alone, before any body is read: a
 * whitelisted key on every route not declared open (a path no route answers included), no new session while it
 * stops, and every body bounded by its declared length. They are judged on the route the router matched
 * (src/http/route-guard.ts), never on the raw path, before the handler reads the body (routes parse none).
 */
import { apiKeyMatcher } from "../core/api-key.ts";
import { AppError, type ErrorCode } from "../core/errors.ts";
import type { DescribedRoute } from "../http/route.ts";
import { whitelistChecker } from "./whitelist.ts";

/**
 * Who may use the session routes and metrics: a standalone notary's API-key whitelist (re-read when the file
 * changes), or the one key an embedded notary shares with its prover alone; unset = no authentication.
 */
export type NotaryAuth = { whitelistPath: string } | { embeddedKey: string };

export interface AdmissionOptions {
  auth?: NotaryAuth;
  /** Each mode's session path (src/protocol/notary.ts, modeRoutes): its routes cost a place or act on one. */
  sessionPaths: readonly string[];
  /** The largest request body accepted, in bytes. */
  bodyLimit: number;
  /** True once the notary stops: it opens no new session. */
  stopping(): boolean;
}

/** What a POST may be refused with before its body is read, whatever its route: for the routes' declarations. */
export const BODY_REFUSALS = ["invalid_header", "payload_too_large"] as const satisfies readonly ErrorCode[];

/** API key from `Authorization: Bearer <key>` or a bare `Authorization: <key>` (TLSNotary clients send it bare). */
const apiKeyOf = (request: Request) => request.headers.get("authorization")?.replace(/^Bearer\s+/i, "").trim() ?? "";

function allowedKeys(auth: NotaryAuth | undefined): (apiKey: string) => boolean {
  if (!auth) return () => true;
  if ("whitelistPath" in auth) return whitelistChecker(auth.whitelistPath);
  const matches = apiKeyMatcher([auth.embeddedKey]);
  return (apiKey) => matches(apiKey);
}

/** The refusal of a call to `route` (undefined: no declared route answers its path), or undefined when it may go on. */
export type Refusal = (request: Request, route: DescribedRoute | undefined) => AppError | undefined;

export function notaryAdmission(options: AdmissionOptions): Refusal {
  const isAllowed = allowedKeys(options.auth);
  const { bodyLimit, sessionPaths } = options;
  return (request, route) => {
    // The session routes cost a place or act on one, and the metrics say what the notary does: with auth, a listed key.
    if (route?.access !== "open") {
      if (options.stopping() && request.method === "POST" && route !== undefined && sessionPaths.includes(route.path)) {
        return new AppError("shutting_down", "the notary is shutting down");
      }
      if (!isAllowed(apiKeyOf(request))) return new AppError("unauthorized", "a whitelisted API key is required");
    }
    if (request.method !== "POST") return undefined;
    // Every body is bounded by its declared length before a byte of it is read.
    const declared = request.headers.get("content-length");
    if (declared === null) return new AppError("invalid_header", "a Content-Length header is required");
    if (Number(declared) > bodyLimit) return new AppError("payload_too_large", `the request body exceeds ${bodyLimit} bytes`);
    return undefined;
  };
}
