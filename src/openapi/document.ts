/**
 * An app's OpenAPI 3.1 document, built from the routes it answers (as its router lists them) and what each
 * declares (src/http/route.ts): its operation comes from its declaration (operation.ts), its `security` from its
 * access. A route nobody declared is listed as `x-undescribed` (the document stays valid and served;
 * test/openapi fails until the route is declared).
 */
import type * as v from "valibot";
import type { ErrorCode } from "../core/errors.ts";
import { type DescribedRoute, alwaysNeedsKey, pathParameters } from "../http/route.ts";
import { VERSION } from "../base/version.ts";
import { schemaConverter } from "./json-schema.ts";
import { ANY_METHOD, type Operation, errorBodies, operationsOf } from "./operation.ts";

/** What a document says of its API beside its routes. */
export interface ApiDescription {
  title: string;
  description: string;
  /** Which keys the `apiKey` security scheme stands for. */
  keyDescription: string;
  /** What the API key check answers a call behind a key without one, or with one it refuses. */
  keyRefusals: readonly ErrorCode[];
  /** Schemas named as components; a route schema that uses one refers to it. */
  schemas: Readonly<Record<string, v.GenericSchema>>;
}

/** `/a/:b` → `/a/{b}`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

/** A route nobody declared: listed, its path parameters as plain strings, and marked so that the test names it. */
function undescribed({ method, path }: DescribedRoute): Record<string, Operation> {
  const parameters = pathParameters(path).map((name) => ({ in: "path", name, required: true, schema: { type: "string" } }));
  const operation = {
    summary: "not described yet: declare it (src/http/route.ts)",
    "x-undescribed": true,
    ...(parameters.length > 0 ? { parameters } : {}),
    responses: { default: { description: "see README.md" } },
  };
  return Object.fromEntries((method === "ALL" ? ANY_METHOD : [method.toLowerCase()]).map((m) => [m, { ...operation }]));
}

/** The document for these routes. */
export function openApiDocument(routes: readonly DescribedRoute[], api: ApiDescription): Record<string, unknown> {
  const context = { schemas: schemaConverter({ ...api.schemas, ...errorBodies }), keyRefusals: api.keyRefusals };
  const paths: Record<string, Record<string, Operation>> = {};
  for (const route of routes) {
    const { declaration, access, method } = route;
    const described = declaration ? operationsOf(declaration, route.errorShape ?? "coded", context) : undescribed(route);
    // Security comes from the access the route declares, as the API key check reads it.
    if (alwaysNeedsKey(access, method)) for (const operation of Object.values(described)) operation.security = [{ apiKey: [] }];
    paths[openApiPath(route.path)] = { ...paths[openApiPath(route.path)], ...described };
  }
  return {
    openapi: "3.1.0",
    info: { title: api.title, version: VERSION, description: api.description },
    paths,
    components: {
      securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: api.keyDescription } },
      schemas: context.schemas.components(),
    },
  };
}
