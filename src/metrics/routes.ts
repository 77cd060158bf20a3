import { Elysia } from "elysia";
import type { Registry } from "./registry.ts";

/** `GET /metrics`: the registry in Prometheus text format. */
export function metricsRoutes(registry: Registry) {
  return new Elysia({ name: "metrics" }).get(
    "/metrics",
    async () => new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } }),
  );
}
