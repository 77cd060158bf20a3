import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { loadProverConfig } from "../../src/config/prover.ts";
import { createLogger } from "../../src/log.ts";
import { openApiDocument } from "../../src/openapi/document.ts";
import { type ProverServer, startProverServer } from "../../src/app/prover.ts";
import { scratchDir } from "../../testkit/env.ts";

/** GET /openapi.json of the real composed prover server, checked by an OpenAPI validator and against the app's routes. */
type Paths = Record<string, Record<string, { security?: unknown[] }>>;

let server: ProverServer;
let document: { openapi: string; paths: Paths };

beforeAll(async () => {
  const config = loadProverConfig({ PROVER_PORT: "0", PROVER_DATA_DIR: scratchDir("openapi"), PROVER_POOL_SIZE: "0", PROVER_API_KEYS: "openapi-key" });
  server = await startProverServer(config, createLogger({ level: "error" }));
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  document = (await response.json()) as typeof document;
}, 120_000);

afterAll(async () => {
  await server?.stop();
}, 120_000);

/** The methods an Elysia route stands for in the document: `ALL /proxy` is the methods the engine can send. */
const methodsOf = (method: string): string[] => (method === "ALL" ? ["get", "post", "put", "delete"] : [method.toLowerCase()]);
const documentPath = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

describe("GET /openapi.json", () => {
  test("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(document.openapi).toBe("3.1.0");
  });

  test("describes every route the server answers: none is listed as undescribed", () => {
    const undescribed = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => (operation as Record<string, unknown>)["x-undescribed"] === true)
        .map(([method]) => `${method} ${path}`),
    );
    expect(undescribed).toEqual([]);
  });

  test("a route added without a description is listed as undescribed, and the document stays valid", async () => {
    const withNew = openApiDocument([...server.routes(), { method: "GET", path: "/new/:thing" }]) as { paths: Paths };
    expect((withNew.paths["/new/{thing}"]?.get as Record<string, unknown>)["x-undescribed"]).toBe(true);
    expect((await new Validator().validate(structuredClone(withNew))).valid).toBe(true);
  });

  test("an operation's security is the access its route was mounted with", () => {
    const withNew = openApiDocument([
      { method: "GET", path: "/new/:thing", access: "key" },
      { method: "GET", path: "/open/:thing", access: "open" },
    ]) as { paths: Paths };
    expect(withNew.paths["/new/{thing}"]?.get?.security).toEqual([{ apiKey: [] }]);
    expect(withNew.paths["/open/{thing}"]?.get?.security).toBeUndefined();
    // Every route the server answers was mounted with a declared access.
    expect(server.routes().filter((route) => route.access === undefined)).toEqual([]);
  });

  test("lists every route the server answers, and nothing else", () => {
    const routes = server.routes();
    expect(routes.length).toBeGreaterThanOrEqual(11);
    const fromApp = routes.flatMap(({ method, path }) => methodsOf(method).map((m) => `${m} ${documentPath(path)}`)).sort();
    const fromDocument = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((m) => `${m} ${path}`)).sort();
    expect(fromDocument).toEqual(fromApp);
  });

  test("every documented operation is a route the server answers, and those behind API keys say so", async () => {
    const sample: Record<string, string> = { requestId: crypto.randomUUID(), id: "openapi-stream", partition: "0", queryType: "last" };
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const url = `${server.url}${path.replace(/\{(\w+)\}/g, (_, name: string) => sample[name] ?? name)}`;
        const response = await fetch(url, { method: method.toUpperCase() });
        const body = await response.text();
        expect(`${method} ${path}: ${body}`).not.toContain("no such route");
        // Routes the API keys guard answer 401 without one; the document must mark them.
        expect(`${method} ${path}: ${response.status === 401}`).toBe(`${method} ${path}: ${operation.security !== undefined}`);
      }
    }
  });
});
