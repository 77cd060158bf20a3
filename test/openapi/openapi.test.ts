import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { type NotaryServer, startNotaryServer } from "../../src/app/notary.ts";
import { type ProverServer, startProverServer } from "../../src/app/prover.ts";
import { loadProverConfig } from "../../src/prover/config.ts";
import { localVerifiers } from "../../src/engine/verifier.ts";
import { createLogger } from "../../src/base/log.ts";
import { openApiDocument } from "../../src/openapi/document.ts";
import { proverApi } from "../../src/openapi/prover-api.ts";
import { ProxyHeaders } from "../../src/prover/call/headers.ts";
import { PROXY_MODE_HEADERS } from "../../src/prover/proxy-mode/headers.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { scratchDir } from "../../testkit/env.ts";

/**
 * GET /openapi.json of the real composed prover and notary servers, checked by an OpenAPI validator, against the
 * routes each app answers, and against what its routes really refuse.
 */
type Operation = { security?: unknown[]; parameters?: { name: string; schema: Record<string, unknown> }[]; responses: Record<string, { description: string; content?: unknown }> };
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

const API_KEY = "openapi-key";
const NOTARY_KEY = "openapi-notary-key";
let server: ProverServer;
let notary: NotaryServer;
let document: Document;
let notaryDocument: Document;

const documentOf = async (base: string): Promise<Document> => {
  const response = await fetch(`${base}/openapi.json`);
  expect(response.status).toBe(200);
  return (await response.json()) as Document;
};

beforeAll(async () => {
  const config = loadProverConfig({ PROVER_PORT: "0", PROVER_DATA_DIR: scratchDir("openapi"), PROVER_POOL_SIZE: "0", PROVER_API_KEYS: API_KEY });
  server = await startProverServer(config, createLogger({ level: "error" }));
  document = await documentOf(server.url);
  // A standalone notary as `cli notary start` runs one, with a whitelist and without proxy mode.
  const whitelistPath = join(scratchDir("openapi-notary"), "whitelist.csv");
  writeFileSync(whitelistPath, `"Name","ApiKey","CreatedAt"\n"openapi","${NOTARY_KEY}","2024-01-01"\n`);
  notary = startNotaryServer({
    host: "127.0.0.1",
    port: 0,
    sessions: { concurrency: 2, maxSentData: 1024, maxRecvData: 2048, timeoutMs: 30_000, connectTimeoutMs: 5_000 },
    verifiers: localVerifiers({ threads: 1 }),
    key: generateKey("secp256k1"),
    auth: { whitelistPath },
    testTrustAnchor: false,
    log: createLogger({ level: "error" }),
  });
  notaryDocument = await documentOf(notary.url);
}, 120_000);

afterAll(async () => {
  await notary?.stop(0);
  await server?.stop();
}, 120_000);

/** The methods an Elysia route stands for in the document: `ALL /proxy` is the methods the engine can send. */
const methodsOf = (method: string): string[] => (method === "ALL" ? ["get", "post", "put", "delete"] : [method.toLowerCase()]);
const documentPath = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

async function expectValid(checked: Document) {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(checked));
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
  expect(validator.version).toBe("3.1");
  expect(checked.openapi).toBe("3.1.0");
}

const undescribedOf = (checked: Document) =>
  Object.entries(checked.paths).flatMap(([path, operations]) =>
    Object.entries(operations)
      .filter(([, operation]) => (operation as Record<string, unknown>)["x-undescribed"] === true)
      .map(([method]) => `${method} ${path}`),
  );

/** Calls every documented operation without a key: each is answered by a route, and 401 exactly where the document says a key is needed. */
async function expectAnsweredAndGuarded(base: string, checked: Document) {
  const sample: Record<string, string> = { requestId: crypto.randomUUID(), id: "openapi-stream", partition: "0", queryType: "last", host: "a.test" };
  for (const [path, operations] of Object.entries(checked.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const url = `${base}${path.replace(/\{(\w+)\}/g, (_, name: string) => sample[name] ?? name)}`;
      const response = await fetch(url, { method: method.toUpperCase() });
      const body = await response.text();
      expect(`${method} ${path}: ${body}`).not.toContain("no such route");
      expect(`${method} ${path}: ${response.status === 401}`).toBe(`${method} ${path}: ${operation.security !== undefined}`);
    }
  }
}

describe("the prover's GET /openapi.json", () => {
  test("is a valid OpenAPI 3.1 document", async () => {
    await expectValid(document);
  });

  test("describes every route the server answers: none is listed as undescribed", () => {
    expect(undescribedOf(document)).toEqual([]);
  });

  test("a route added without a declaration is listed as undescribed, and the document stays valid", async () => {
    const withNew = openApiDocument([...server.routes(), { method: "GET", path: "/new/:thing" }], proverApi) as Document;
    expect((withNew.paths["/new/{thing}"]?.get as Record<string, unknown>)["x-undescribed"]).toBe(true);
    expect((await new Validator().validate(structuredClone(withNew))).valid).toBe(true);
  });

  test("an operation's security is the access its route declares", () => {
    const withNew = openApiDocument(
      [
        { method: "GET", path: "/new/:thing", access: "key" },
        { method: "GET", path: "/open/:thing", access: "open" },
      ],
      proverApi,
    ) as Document;
    expect(withNew.paths["/new/{thing}"]?.get?.security).toEqual([{ apiKey: [] }]);
    expect(withNew.paths["/open/{thing}"]?.get?.security).toBeUndefined();
    // Every route the server answers is declared whole, /proxy included, and so declares its access.
    expect(server.routes().filter((route) => route.access === undefined)).toEqual([]);
    expect(server.routes().filter((route) => route.declaration === undefined).map(({ method, path }) => `${method} ${path}`)).toEqual([]);
  });

  test("lists every route the server answers, and nothing else", () => {
    const routes = server.routes();
    expect(routes.length).toBeGreaterThanOrEqual(11);
    const fromApp = routes.flatMap(({ method, path }) => methodsOf(method).map((m) => `${m} ${documentPath(path)}`)).sort();
    const fromDocument = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((m) => `${m} ${path}`)).sort();
    expect(fromDocument).toEqual(fromApp);
  });

  test("every documented operation is a route the server answers, and those behind API keys say so", async () => {
    await expectAnsweredAndGuarded(server.url, document);
  });
});

describe("a route's declared schemas validate what it is sent, and its document lists the refusal", () => {
  const auth = { authorization: `Bearer ${API_KEY}` };
  const storeQuery = "/stores/{id}/data/partitions/{partition}/{queryType}";
  /** [operation, request, status, the product's code (coded errors) or message (the store's `{"error"}`)] */
  const cases: [string, string, RequestInit, number, { code: string } | { error: string; code: string }][] = [
    ["get /proof/{requestId}", "/proof/not-a-uuid", {}, 400, { code: "invalid_request_id" }],
    ["delete /pool/{host}", "/pool/not_a_host", { method: "DELETE" }, 400, { code: "invalid_query" }],
    ["delete /pool/{host}", "/pool/a..test", { method: "DELETE" }, 400, { code: "invalid_query" }],
    ["get /prepare", "/prepare", { headers: { "T-PROXY-URL": "https://a.test/" } }, 400, { code: "invalid_header" }],
    ["get /prepare", "/prepare", { headers: { "T-PREPARE": "two", "T-PROXY-URL": "https://a.test/" } }, 400, { code: "invalid_header" }],
    // /prepare reads the target and the sizes with /proxy's own header schema.
    ["get /prepare", "/prepare", { headers: { "T-PREPARE": "1", "T-PROXY-URL": "http://a.test/" } }, 400, { code: "invalid_header" }],
    ["get /prepare", "/prepare", { headers: { "T-PREPARE": "1", "T-PROXY-URL": "https://a.test/", "T-MAX-RECV-DATA": "lots" } }, 400, { code: "invalid_header" }],
    ["get /proxy", "/proxy", { headers: { "T-REQUEST-ID": crypto.randomUUID() } }, 400, { code: "invalid_header" }],
    ["get /proxy", "/proxy", { headers: { "T-PROXY-URL": "https://a.test/", "T-REQUEST-ID": "42" } }, 400, { code: "invalid_request_id" }],
    ["post /proxy", "/proxy", { method: "POST", headers: { "T-PROXY-URL": "https://a.test/", "T-REQUEST-ID": crypto.randomUUID(), "T-REDACTED": "bogus:x" } }, 400, { code: "invalid_redaction" }],
    ["post /proxy", "/proxy", { method: "POST", headers: { "T-PROXY-URL": "https://a.test/", "T-REQUEST-ID": crypto.randomUUID() }, body: "{not json" }, 400, { code: "invalid_body" }],
    [`get ${storeQuery}`, "/stores/s/data/partitions/x/last", {}, 400, { error: 'Path parameter "partition" not a number: x', code: "invalid_query" }],
    [`get ${storeQuery}`, "/stores/s/data/partitions/0/newest", {}, 400, { error: "Unknown query type: newest (expected one of last, from, range)", code: "invalid_query" }],
    [`get ${storeQuery}`, "/stores/s/data/partitions/0/last?count=ten", {}, 400, { error: 'Query parameter "count" not a number: ten', code: "invalid_query" }],
    [`get ${storeQuery}`, "/stores/s/data/partitions/0/last?count=1&count=2", {}, 400, { error: 'Query parameter "count" given more than once', code: "invalid_query" }],
    [
      "post /stores/{id}/data/partitions/{partition}",
      "/stores/s/data/partitions/0",
      { method: "POST", body: JSON.stringify({ content: 1, extra: true }) },
      400,
      { error: 'entry 0: unknown key "extra"', code: "invalid_body" },
    ],
  ];
  for (const [operation, url, init, status, expected] of cases) {
    test(`${operation}: ${url} ${init.headers ? JSON.stringify(init.headers) : (init.body ?? "")}`, async () => {
      const response = await fetch(`${server.url}${url}`, { ...init, headers: { ...auth, ...init.headers } });
      const body = (await response.json()) as { error: string | { code: string } };
      expect(response.status).toBe(status);
      if ("error" in expected) expect(body).toEqual({ error: expected.error });
      else expect(body.error).toMatchObject({ code: expected.code });
      const [method, path] = operation.split(" ") as [string, string];
      const documented = document.paths[path]?.[method]?.responses[String(status)];
      expect(documented?.description).toContain(expected.code);
      const errorBody = "error" in expected ? "StoreError" : "Error";
      expect(documented?.content).toEqual({ "application/json": { schema: { $ref: `#/components/schemas/${errorBody}` } } });
    });
  }

  test("delete /pool/{host}: a fully qualified name is the host without its trailing dot, as /proxy names targets", async () => {
    const response = await fetch(`${server.url}/pool/API.example.com.`, { method: "DELETE", headers: auth });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ host: "api.example.com", closed: 0 });
  });

  test("a parameter is documented with its schema: the request id a UUID, T-PREPARE required, the store's format one of its values", () => {
    const parameter = (method: string, path: string, name: string) => document.paths[path]?.[method]?.parameters?.find((p) => p.name === name);
    expect(parameter("get", "/proof/{requestId}", "requestId")?.schema).toMatchObject({ type: "string", format: "uuid" });
    expect(parameter("get", "/prepare", "t-prepare")).toMatchObject({ required: true, schema: { type: "string", pattern: "^\\d{1,3}$" } });
    expect(parameter("get", storeQuery, "format")).toMatchObject({ required: false, schema: { type: "string", enum: ["object", "raw"] } });
  });

  test("/proxy's headers are documented from the schema it parses them with, for each method; a body where one is sent", () => {
    const proxy = document.paths["/proxy"]!;
    expect(Object.keys(proxy).sort()).toEqual(["delete", "get", "post", "put"]);
    for (const operation of Object.values(proxy)) {
      const headers = Object.fromEntries((operation.parameters ?? []).map((p) => [p.name, p]));
      // Every mode's headers, then the built-in modes' own.
      expect(Object.keys(headers)).toEqual([...Object.keys(ProxyHeaders.entries), ...Object.keys(PROXY_MODE_HEADERS.request)]);
      expect(headers["t-proxy-url"]).toMatchObject({ in: "header", required: true, schema: { type: "string", format: "uri", pattern: "^https://" } });
      expect(headers["t-request-id"]).toMatchObject({ required: true, schema: { format: "uuid" } });
      expect(headers["t-redacted-unmatched"]).toMatchObject({ required: false, schema: { enum: ["allow", "refuse"], default: "refuse" } });
      expect(operation.security).toEqual([{ apiKey: [] }]);
      expect(Object.keys(operation.responses["default"] as object)).toContain("headers");
    }
    expect(Object.entries(proxy).filter(([, operation]) => "requestBody" in operation).map(([method]) => method).sort()).toEqual(["post", "put"]);
    // /prepare's target and sizes are /proxy's entries.
    const prepare = document.paths["/prepare"]?.get?.parameters ?? [];
    expect(prepare.find((p) => p.name === "t-proxy-url")).toEqual(proxy.get!.parameters!.find((p) => p.name === "t-proxy-url"));
  });
});

describe("the notary's GET /openapi.json", () => {
  test("is a valid OpenAPI 3.1 document that describes every route the notary answers", async () => {
    await expectValid(notaryDocument);
    expect(undescribedOf(notaryDocument)).toEqual([]);
    // Without proxy mode, POST /proxy-session is its refusal, so that a prover learns why.
    expect(Object.keys(notaryDocument.paths).sort()).toEqual(
      ["/healthcheck", "/info", "/metrics", "/openapi.json", "/proxy-session", "/session", "/session/{id}", "/session/{id}/attestation"].sort(),
    );
  });

  test("every documented operation is a route the notary answers, and those behind its whitelist say so", async () => {
    await expectAnsweredAndGuarded(notary.url, notaryDocument);
  });

  test("with proxy mode (the prover's embedded notary, behind its own key), its proxy-mode routes are described too", async () => {
    const embedded = await documentOf(server.notary!.url);
    await expectValid(embedded);
    expect(undescribedOf(embedded)).toEqual([]);
    expect(Object.keys(embedded.paths)).toContain("/proxy-session/{id}/attestation");
    await expectAnsweredAndGuarded(server.notary!.url, embedded);
  });

  test("a session request its schema refuses is invalid_body, as the document lists", async () => {
    const response = await fetch(`${notary.url}/session`, {
      method: "POST",
      headers: { authorization: `Bearer ${NOTARY_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ maxSentData: "lots", maxRecvData: 2048 }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "invalid_body", message: expect.stringContaining("session request: maxSentData") });
    expect(notaryDocument.paths["/session"]?.post?.responses["400"]?.description).toContain("invalid_body");
  });
});
