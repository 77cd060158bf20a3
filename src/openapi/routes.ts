import { Elysia } from "elysia";
import { type AppRoute, openApiDocument } from "./document.ts";

/** `GET /openapi.json`, built at the first request from the app's routes as they are then. */
export function openApiRoutes(appRoutes: () => readonly AppRoute[]) {
  let document: Record<string, unknown> | undefined;
  return new Elysia({ name: "openapi" }).get("/openapi.json", () => (document ??= openApiDocument(appRoutes())));
}
