/**
 * Cross-origin browser clients (CORS): only pages of the origins the operator lists (PROVER_CORS_ORIGINS) may
 * call the prover and read its answers; none by default. A page on another origin gets no CORS headers, and its
 * preflight a 403, so the browser blocks the call. Preflights are answered before API keys are checked: browsers
 * send them without the Authorization header.
 */
import { AppError } from "../core/errors.ts";
import { type ErrorShape, errorResponse } from "../http/error-handling.ts";

/** What a /proxy call may carry: the engine's methods, and any header (a client forwards its own to the target). */
const ALLOWED_METHODS = "GET, POST, PUT, DELETE";
/** A browser caches a preflight's answer this long. */
const PREFLIGHT_MAX_AGE_S = 600;

export interface Cors {
  /** The answer to a preflight (OPTIONS with Origin and Access-Control-Request-Method); undefined for other requests. */
  preflight(request: Request): Response | undefined;
  /** The response with the CORS headers its request's origin gets (none for an origin not listed). */
  decorate(request: Request, response: Response): Response;
}

export function corsPolicy(origins: readonly string[], errorShapeOf: (pathname: string) => ErrorShape): Cors {
  const allowed = new Set(origins);
  const listed = (request: Request): string | undefined => {
    const origin = request.headers.get("origin");
    return origin !== null && allowed.has(origin) ? origin : undefined;
  };
  return {
    preflight(request) {
      if (request.method !== "OPTIONS" || !request.headers.has("origin") || !request.headers.has("access-control-request-method")) return undefined;
      const origin = listed(request);
      const { pathname } = new URL(request.url);
      if (!origin) return errorResponse(new AppError("forbidden", "this origin is not in PROVER_CORS_ORIGINS"), { shape: errorShapeOf(pathname) });
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": ALLOWED_METHODS,
          "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? "",
          "access-control-max-age": String(PREFLIGHT_MAX_AGE_S),
          vary: "Origin, Access-Control-Request-Headers",
        },
      });
    },
    decorate(request, response) {
      const origin = listed(request);
      if (!origin) return response;
      const decorated = new Response(response.body, response);
      decorated.headers.set("access-control-allow-origin", origin);
      // The target's headers and the prover's own (T-PROOF-ID, Retry-After) are the answer: a page may read them.
      decorated.headers.set("access-control-expose-headers", "*");
      decorated.headers.append("vary", "Origin");
      return decorated;
    },
  };
}
