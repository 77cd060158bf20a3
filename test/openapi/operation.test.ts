import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { declareRoute } from "../../src/http/route.ts";
import { schemaConverter } from "../../src/openapi/json-schema.ts";
import { errorBodies, operationOf, operationsOf } from "../../src/openapi/operation.ts";

/** A declared route's OpenAPI operation, built from the same declaration its requests are validated with. */
const Named = v.object({ name: v.string() });
const thing = declareRoute({
  method: "POST",
  path: "/things/:id",
  operationId: "thing",
  summary: "a thing",
  description: "all about it",
  access: "key",
  params: { schema: v.object({ id: v.pipe(v.string(), v.description("its number"), v.regex(/^\d+$/), v.transform(Number)) }), code: "not_found" },
  query: { schema: v.object({ mode: v.optional(v.picklist(["a", "b"]), "a") }), code: "invalid_query" },
  headers: { schema: v.object({ "t-size": v.string() }), code: "invalid_header" },
  body: { schema: Named, code: "invalid_body" },
  responses: { 200: { description: "the thing", content: { "application/json": Named, "text/plain": v.string() } } },
  errors: ["over_capacity", "invalid_body"],
});
const context = (keyRefusals: ("unauthorized" | "forbidden")[]) => ({ schemas: schemaConverter({ Named, ...errorBodies }), keyRefusals });

describe("operationOf", () => {
  const operation = operationOf(thing, "coded", context(["unauthorized"])) as {
    parameters: unknown[];
    requestBody: unknown;
    responses: Record<string, { description: string; content?: unknown; headers?: unknown }>;
  };

  test("names it and lists each part's entries as parameters, read as a request carries them, described by their schema", () => {
    expect(operation).toMatchObject({ operationId: "thing", summary: "a thing", description: "all about it" });
    expect(operation.parameters).toEqual([
      { in: "path", name: "id", required: true, description: "its number", schema: { type: "string", pattern: "^\\d+$" } },
      { in: "query", name: "mode", required: false, schema: { type: "string", enum: ["a", "b"], default: "a" } },
      { in: "header", name: "t-size", required: true, schema: { type: "string" } },
    ]);
  });

  test("a named schema is a reference to its component, in the body and the answers", () => {
    expect(operation.requestBody).toEqual({ required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/Named" } } } });
    expect(operation.responses["200"]).toEqual({
      description: "the thing",
      content: { "application/json": { schema: { $ref: "#/components/schemas/Named" } }, "text/plain": { schema: { type: "string" } } },
    });
  });

  test("its errors by status: its parts' codes, the key check's, its handler's, each once; Retry-After where a code says to retry", () => {
    const described = Object.fromEntries(Object.entries(operation.responses).map(([status, response]) => [status, response.description]));
    expect(described).toEqual({
      "200": "the thing",
      "400": "error codes: invalid_query, invalid_header, invalid_body",
      "401": "error codes: unauthorized",
      "404": "error codes: not_found",
      "503": "error codes: over_capacity",
    });
    expect(operation.responses["400"]?.content).toEqual({ "application/json": { schema: { $ref: "#/components/schemas/Error" } } });
    expect(operation.responses["400"]?.headers).toBeUndefined();
    expect(operation.responses["503"]?.headers).toMatchObject({ "Retry-After": { schema: { type: "integer" } } });
  });

  test("the store's shape refers to its own error body; an open route lists no refusal of the key check", () => {
    const store = operationOf({ ...thing, access: "open" }, "log-store", context(["unauthorized", "forbidden"])) as { responses: Record<string, { content?: unknown }> };
    expect(store.responses["400"]?.content).toEqual({ "application/json": { schema: { $ref: "#/components/schemas/StoreError" } } });
    expect(Object.keys(store.responses)).toEqual(["200", "400", "404", "503"]);
  });
});

describe("operationsOf", () => {
  /** A route as `/proxy` is: any method, an optional body, the target's status passed on with headers of its own. */
  const answer = { description: "the target's answer", headers: { "T-PROOF-ID": v.pipe(v.string(), v.uuid()) } };
  const body = { schema: v.unknown(), code: "invalid_body", optional: true } as const;
  const passOn = declareRoute({ method: "ALL", path: "/pass", operationId: "pass", summary: "pass it on", access: "open", body, responses: { default: answer } });

  test("a route of one method is one operation; one of any method (`ALL`) one per method a proof can be made of, a body only where one is sent", () => {
    expect(Object.keys(operationsOf(thing, "coded", context([])))).toEqual(["post"]);
    const any = operationsOf(passOn, "coded", context([]));
    expect(Object.keys(any)).toEqual(["get", "post", "put", "delete"]);
    expect(Object.values(any).map((operation) => operation.operationId)).toEqual(["passGet", "passPost", "passPut", "passDelete"]);
    expect(Object.entries(any).filter(([, operation]) => "requestBody" in operation).map(([method]) => method)).toEqual(["post", "put"]);
    expect(any.post).toMatchObject({
      requestBody: { required: false },
      responses: { default: { description: "the target's answer", headers: { "T-PROOF-ID": { schema: { type: "string", format: "uuid" } } } } },
    });
  });
});
