import * as v from "valibot";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import type { Logger } from "../base/log.ts";
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

export const homeRoute = declareRoute({
  method: "GET",
  path: "/",
  operationId: "home",
  summary: "a page linking what a person starts from: the proof viewer, the API's OpenAPI document, the prover's /info",
  access: "open",
  responses: { 200: { description: "the page", content: { "text/html": v.string() } } },
  errors: [],
});

/** What a person opening the prover's address finds: where to go next. No script, nothing from elsewhere. */
const HOME_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tlsproof prover</title></head>
<body>
<h1>tlsproof prover</h1>
<ul>
<li><a href="/viewer">/viewer</a>: check a proof in this browser; <code>/viewer?requestId=ID</code> loads that proof from this prover</li>
<li><a href="/openapi.json">/openapi.json</a>: the API (<code>/proxy</code> with <code>T-PROXY-URL</code>, <code>/proof/{requestId}</code>, the store)</li>
<li><a href="/info">/info</a>: this prover's notaries, their keys and modes</li>
</ul>
</body></html>
`;

/** `GET /viewer`: the proof viewer, one self-contained HTML page; `GET /`: links to it and to the API. */
export function viewerRoutes(log: Logger): RouteGroup {
  // Built while the server starts, so the first visitor does not wait for it; a failed build is logged now
  // and answered as an internal error on every visit.
  viewerHtml().catch((error: unknown) => log.error("the viewer page cannot be built", { error: errorText(error) }));
  const viewer = bindRoute(
    viewerRoute,
    async () => new Response(await viewerHtml(), { headers: VIEWER_HEADERS }),
  );
  const home = bindRoute(homeRoute, () => new Response(HOME_HTML, { headers: { ...VIEWER_HEADERS, "content-security-policy": "default-src 'none'; frame-ancestors 'none'" } }));
  return routeGroup("viewer", [viewer, home]);
}
