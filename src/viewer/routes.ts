import * as v from "valibot";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import type { Logger } from "../core/log.ts";
import { errorText } from "../core/errors.ts";

// The compiled binary carries the page, built by scripts/build.ts; from source it is built at first use.
declare const TLSPROOF_VIEWER_HTML: string | undefined;

let page: Promise<string> | undefined;

function viewerHtml(): Promise<string> {
  if (typeof TLSPROOF_VIEWER_HTML === "string") return Promise.resolve(TLSPROOF_VIEWER_HTML);
  page ??= import("./bundle.ts").then(({ buildViewerHtml }) => buildViewerHtml());
  return page;
}

/**
 * The page's policy as a header too: a meta policy cannot say frame-ancestors, and a page that shows "valid" must
 * not be framed by another site (clickjacking a verdict).
 */
export const VIEWER_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'";
const VIEWER_HEADERS = { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", "content-security-policy": VIEWER_CSP };

export const viewerRoute = declareRoute({
  method: "GET",
  path: "/viewer",
  operationId: "viewer",
  summary: "the proof viewer: one self-contained HTML page",
  access: "open",
  responses: { 200: { description: "the page", content: { "text/html": v.string() } } },
  errors: ["internal"],
});

/** `GET /viewer`: the proof viewer, one self-contained HTML page. */
export function viewerRoutes(log: Logger): RouteGroup {
  // Built while the server starts, so the first visitor does not wait for it; a failed build is logged now
  // and answered as an internal error on every visit.
  viewerHtml().catch((error: unknown) => log.error("the viewer page cannot be built", { error: errorText(error) }));
  const viewer = bindRoute(
    viewerRoute,
    async () => new Response(await viewerHtml(), { headers: VIEWER_HEADERS }),
  );
  return routeGroup("viewer", [viewer]);
}
