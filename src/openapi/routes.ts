import * as v from "valibot";
import { type DescribedRoute, type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import { type ApiDescription, openApiDocument } from "./document.ts";

export const openApiRoute = declareRoute({
  method: "GET",
  path: "/openapi.json",
  operationId: "openapi",
  summary: "this document",
  access: "open",
  responses: { 200: { description: "OpenAPI 3.1", content: { "application/json": v.looseObject({}) } } },
});

/** `GET /openapi.json`, built at the first request from the app's routes as they are then. */
export function openApiRoutes(appRoutes: () => readonly DescribedRoute[], api: ApiDescription): RouteGroup {
  let document: Record<string, unknown> | undefined;
  return routeGroup("openapi", [bindRoute(openApiRoute, () => (document ??= openApiDocument(appRoutes(), api)))]);
}
