import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import * as v from "valibot";
import { AppError } from "../../src/core/errors.ts";
import { errorHandling } from "../../src/http/error-handling.ts";
import { bindRoute, declareRoute, describeRoutes, groupRoutes, routeGroup, validateRequest } from "../../src/http/route.ts";
import { createLogger } from "../../src/base/log.ts";
import { errorCodesOf } from "../../src/openapi/operation.ts";

/** What a test route's declaration needs beside what it is about. */
const named = { operationId: "x", summary: "x", access: "open", responses: {} } as const;

/** A route with every part declared, each refused with its own code. */
const thing = declareRoute({
  method: "POST",
  path: "/things/:id",
  operationId: "thing",
  summary: "a thing",
  access: "key",
  params: { schema: v.object({ id: v.pipe(v.string(), v.regex(/^\d+$/, "must be digits"), v.transform(Number)) }), code: "not_found" },
  query: { schema: v.object({ mode: v.optional(v.picklist(["a", "b"]), "a") }), code: "invalid_query" },
  headers: { schema: v.object({ "t-size": v.pipe(v.string(), v.regex(/^\d+$/)) }), code: "invalid_header", wording: { where: "header" } },
  body: { schema: v.strictObject({ name: v.string() }), code: "invalid_body", wording: { where: "thing" }, notJson: "not JSON at all" },
  responses: { 200: { description: "the thing", content: { "application/json": v.object({ id: v.number(), name: v.string() }) } } },
});

const request = (url: string, init: RequestInit = {}) => new Request(`http://localhost${url}`, { method: "POST", ...init });
const refusal = (work: () => unknown): { code: string; message: string } => {
  try {
    work();
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("not refused");
};

describe("declareRoute", () => {
  test("refuses a declaration whose params schema and path name different parameters", () => {
    const declared = (path: string, params?: v.ObjectEntries) =>
      declareRoute({ ...named, method: "GET", path, ...(params ? { params: { schema: v.object(params), code: "not_found" } } : {}) });
    expect(() => declared("/a/:b")).toThrow("path parameters [b] but params schema []");
    expect(() => declared("/a/:b", { c: v.string() })).toThrow("path parameters [b] but params schema [c]");
    expect(() => declared("/a", { b: v.string() })).toThrow("path parameters [] but params schema [b]");
    expect(declared("/a/:b", { b: v.string() }).path).toBe("/a/:b");
  });
});

describe("validateRequest", () => {
  test("parses each part with its schema: the handler gets the outputs", async () => {
    const input = validateRequest(thing, request("/things/7?mode=b", { headers: { "T-Size": "3" }, body: '{"name":"n"}' }), { id: "7" });
    expect(input.params).toEqual({ id: 7 });
    expect(input.query).toEqual({ mode: "b" });
    // Header names are matched whatever their case; only the declared ones are read.
    expect(input.headers).toEqual({ "t-size": "3" });
    expect(await input.body()).toEqual({ name: "n" });
  });

  test("refuses the first part its schema refuses, in order, with that part's code and wording", () => {
    const bad = request("/things/x?mode=c", { body: "{}" });
    expect(refusal(() => validateRequest(thing, bad, { id: "x" }))).toEqual({ code: "not_found", message: "id: must be digits" });
    expect(refusal(() => validateRequest(thing, bad, { id: "1" })).code).toBe("invalid_query");
    expect(refusal(() => validateRequest(thing, request("/things/1"), { id: "1" }))).toEqual({ code: "invalid_header", message: 'header: missing key "t-size"' });
    expect(refusal(() => validateRequest(thing, request("/things/1?mode=a&mode=b"), { id: "1" }))).toEqual({
      code: "invalid_query",
      message: 'Query parameter "mode" given more than once',
    });
  });

  test("a refused entry answers its own code where its part names one, and the document lists it", () => {
    const route = declareRoute({
      ...named,
      method: "GET",
      path: "/p",
      headers: {
        schema: v.object({ "t-id": v.pipe(v.string(), v.uuid("T-ID must be a UUID")), "t-n": v.pipe(v.string(), v.regex(/^\d+$/, "T-N must be a number")) }),
        code: "invalid_header",
        entryCodes: { "t-id": "invalid_request_id" },
        wording: { messageOnly: true },
      },
    });
    const sent = (headers: Record<string, string>) => refusal(() => validateRequest(route, request("/p", { method: "GET", headers }), {}));
    expect(sent({ "t-id": "x", "t-n": "1" })).toEqual({ code: "invalid_request_id", message: "T-ID must be a UUID" });
    expect(sent({ "t-id": crypto.randomUUID(), "t-n": "x" })).toEqual({ code: "invalid_header", message: "T-N must be a number" });
    expect(errorCodesOf(route, [])).toEqual(["invalid_header", "invalid_request_id"]);
  });

  test("the body is read only when the handler asks, and refused with its part's code", async () => {
    const headers = { "t-size": "1" };
    const unread = request("/things/1", { headers, body: "{nope" });
    validateRequest(thing, unread, { id: "1" });
    expect(unread.bodyUsed).toBe(false);
    await expect(validateRequest(thing, request("/things/1", { headers, body: "{nope" }), { id: "1" }).body()).rejects.toMatchObject({ code: "invalid_body", message: "not JSON at all" });
    await expect(validateRequest(thing, request("/things/1", { headers, body: '{"name":1}' }), { id: "1" }).body()).rejects.toMatchObject({
      code: "invalid_body",
      message: "thing: name: Invalid type: Expected string but received 1",
    });
  });
});

describe("a body read under a limit", () => {
  const headers = { "t-size": "1" };
  const limit = { maxBytes: 16 };

  test("a Content-Length over the limit is payload_too_large before a byte is read", async () => {
    const sent = request("/things/1", { headers: { ...headers, "content-length": "17" }, body: '{"name":"sixteen!"}' });
    await expect(validateRequest(thing, sent, { id: "1" }).body(limit)).rejects.toMatchObject({ code: "payload_too_large", message: "the request body exceeds 16 bytes" });
    expect(sent.bodyUsed).toBe(false);
  });

  test("a body without a length is counted as it is read; one within the limit is read as always", async () => {
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"name":'));
        controller.enqueue(new TextEncoder().encode('"more than sixteen"}'));
        controller.close();
      },
    });
    const streamed = request("/things/1", { headers, body: chunked, duplex: "half" } as RequestInit);
    expect(streamed.headers.get("content-length")).toBeNull();
    await expect(validateRequest(thing, streamed, { id: "1" }).body(limit)).rejects.toMatchObject({ code: "payload_too_large" });
    expect(await validateRequest(thing, request("/things/1", { headers, body: '{"name":"n"}' }), { id: "1" }).body(limit)).toEqual({ name: "n" });
  });
});

describe("a part's refusals", () => {
  test("the first refusal in the schema's order ends the parse: a later entry that throws its own refusal is not read", () => {
    const route = declareRoute({
      ...named,
      method: "GET",
      path: "/p",
      headers: {
        schema: v.object({
          "t-a": v.pipe(v.string(), v.regex(/^\d+$/, "must be digits")),
          "t-b": v.pipe(
            v.string(),
            v.transform((text: string) => {
              throw new AppError("invalid_redaction", `T-B refused ${text.length}`);
            }),
          ),
        }),
        code: "invalid_header",
      },
    });
    const sent = (headers: Record<string, string>) => refusal(() => validateRequest(route, request("/p", { method: "GET", headers }), {}));
    expect(sent({ "t-a": "x", "t-b": "y" })).toEqual({ code: "invalid_header", message: "t-a: must be digits" });
    expect(sent({ "t-a": "1", "t-b": "y" })).toEqual({ code: "invalid_redaction", message: "T-B refused 1" });
  });

  test("selfNamed: a message that begins with its field's name stands alone, the others are placed", () => {
    const route = declareRoute({
      ...named,
      method: "GET",
      path: "/p",
      headers: {
        schema: v.object({ "t-id": v.pipe(v.string("T-ID is required"), v.uuid("T-ID must be a UUID")), "t-n": v.optional(v.pipe(v.string(), v.regex(/^\d+$/, "must be a number"))) }),
        code: "invalid_header",
        wording: { where: "header", selfNamed: true },
      },
    });
    const sent = (headers: Record<string, string>) => refusal(() => validateRequest(route, request("/p", { method: "GET", headers }), {}));
    expect(sent({})).toEqual({ code: "invalid_header", message: "T-ID is required" });
    expect(sent({ "t-id": "x" })).toEqual({ code: "invalid_header", message: "T-ID must be a UUID" });
    expect(sent({ "t-id": crypto.randomUUID(), "t-n": "x" })).toEqual({ code: "invalid_header", message: "header: t-n: must be a number" });
  });

  test("a bound route's `refused` sees what its declaration refused before the handler, and answers in its place", async () => {
    const seen: string[] = [];
    const route = bindRoute(thing, () => ({ id: 0, name: "never" }), {
      async refused(error, sent) {
        seen.push(`${(error as AppError).code} ${new URL(sent.url).pathname}`);
        throw new AppError("forbidden", "refused and noted");
      },
    });
    const app = new Elysia().use(errorHandling(createLogger({ level: "error" }))).use(routeGroup("noted", [route]));
    const answer = await app.handle(request("/things/1", { body: "{}" }));
    expect(answer.status).toBe(403);
    expect(await answer.json()).toEqual({ error: { code: "forbidden", message: "refused and noted" } });
    expect(seen).toEqual(["invalid_header /things/1"]);
  });
});

describe("an optional body", () => {
  const optional = declareRoute({ ...named, method: "ALL", path: "/any", body: { schema: v.optional(v.object({ n: v.number() })), code: "invalid_body", optional: true } });

  test("is undefined when the request carries none (or a blank one); a body it does carry is still validated", async () => {
    expect(await validateRequest(optional, request("/any", { method: "GET" }), {}).body()).toBeUndefined();
    expect(await validateRequest(optional, request("/any", { body: " \n" }), {}).body()).toBeUndefined();
    expect(await validateRequest(optional, request("/any", { body: '{"n":1}' }), {}).body()).toEqual({ n: 1 });
    await expect(validateRequest(optional, request("/any", { body: "{" }), {}).body()).rejects.toMatchObject({ code: "invalid_body" });
    // Without `optional`, an empty body is not JSON.
    await expect(validateRequest(thing, request("/things/1", { headers: { "t-size": "1" } }), { id: "1" }).body()).rejects.toMatchObject({ message: "not JSON at all" });
  });

  test("a route of any method answers every method", async () => {
    const app = new Elysia().use(routeGroup("any", [bindRoute(optional, async ({ request, body }) => Response.json({ method: request.method, body: (await body()) ?? null }))]));
    for (const method of ["GET", "PATCH", "DELETE"]) expect(await (await app.handle(request("/any", { method }))).json()).toEqual({ method, body: null });
  });
});

describe("routeGroup", () => {
  const group = routeGroup("things", [bindRoute(thing, async ({ params, body }) => ({ id: params.id, ...(await body()) }))]);
  const app = new Elysia().use(errorHandling(createLogger({ level: "error" }))).use(group);

  test("is an Elysia plugin whose routes answer through their declarations", async () => {
    const ok = await app.handle(request("/things/5", { headers: { "t-size": "1" }, body: '{"name":"five"}' }));
    expect(await ok.json()).toEqual({ id: 5, name: "five" });
    const refused = await app.handle(request("/things/five", { headers: { "t-size": "1" }, body: "{}" }));
    expect(refused.status).toBe(404);
    expect(await refused.json()).toEqual({ error: { code: "not_found", message: "id: must be digits" } });
  });

  test("describes the app's routes with what each declares; a route of another plugin, bare", () => {
    const described = describeRoutes([...app.routes, { method: "GET", path: "/other" }], groupRoutes(group));
    expect(described).toEqual([
      { method: "POST", path: "/things/:id", access: "key", errorShape: "coded", declaration: thing },
      { method: "GET", path: "/other" },
    ]);
  });
});
