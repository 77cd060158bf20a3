import * as v from "valibot";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import type { Registry } from "./registry.ts";

export const metricsRoute = declareRoute({
  method: "GET",
  path: "/metrics",
  operationId: "metrics",
  summary: "Prometheus metrics, text format",
  access: "key",
  responses: { 200: { description: "Prometheus text exposition format 0.0.4", content: { "text/plain": v.string() } } },
});

/** `GET /metrics`: the registry in Prometheus text format. */
export function metricsRoutes(registry: Registry): RouteGroup {
  const metrics = bindRoute(metricsRoute, async () => new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } }));
  return routeGroup("metrics", [metrics]);
}
