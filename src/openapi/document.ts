/**
 * The prover's OpenAPI 3.1 document. Every route the app answers must have an entry in `operations`: the
 * document is built from the app's own route list, and a route without one is listed as `x-undescribed`
 * (the document stays valid and served; test/openapi fails until the route is described here). Parameters and
 * bodies come from the valibot schemas the routes validate with; /proxy's headers from ProxyHeaders, the one
 * schema /proxy parses them with (src/prover/proxy/headers.ts).
 */
import { ErrorReply, NotaryInfo } from "../protocol/notary.ts";
import { SessionSizes } from "../core/session-sizes.ts";
import { proofSchema } from "../proof/proof-schema.ts";
import { RequestIdParam } from "../prover/delivery/routes.ts";
import { HostParam, PrepareHeaders } from "../prover/pool/routes.ts";
import { ProxyHeaders } from "../prover/proxy/headers.ts";
import { contentEntrySchema } from "../store/publish.ts";
import { rawMessageSchema } from "../store/message.ts";
import { partitionSchema, querySchema } from "../store/query.ts";
import { type DeclaredRoute, alwaysNeedsKey } from "../prover/route-access.ts";
import { VERSION } from "../version.ts";
import { type JsonSchema, entrySchema, jsonSchemaOf } from "./json-schema.ts";

/** A route as Elysia lists it, with the access it was mounted with. */
export type AppRoute = DeclaredRoute;

type Operation = Record<string, unknown>;

/** The methods `ALL /proxy` can prove (the engine's). */
const PROXY_METHODS = ["get", "post", "put", "delete"] as const;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonSchema) => ({ "application/json": { schema } });
const text = (description: string, type = "text/plain") => ({ description, content: { [type]: { schema: { type: "string" } } } });
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [String(status), { description: "an error with its code", content: json(ref("Error")) }]));
/** The message store's errors keep the Log Store's `{"error": "<message>"}`. */
const storeErrors = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [
      String(status),
      { description: "an error", content: json({ type: "object", properties: { error: { type: "string" } }, required: ["error"] }) },
    ]),
  );
/** Every notary a prover uses, in configuration order (src/prover/notary/notary-pool.ts, NotaryStatus). */
const notaryList = {
  type: "array",
  items: {
    type: "object",
    properties: {
      publicKey: { type: ["string", "null"], description: "SPKI PEM; null until the notary answered once" },
      signatureAlgorithm: { type: ["string", "null"] },
      ethereumAddress: { type: ["string", "null"] },
      healthy: { type: "boolean" },
    },
    required: ["publicKey", "signatureAlgorithm", "ethereumAddress", "healthy"],
  },
};

const header = (name: string, description: string, schema: JsonSchema, required = false) => ({ in: "header", name, description, required, schema });
/** /proxy's headers, each described by its entry of ProxyHeaders: its description, its schema, whether it is required. */
const proxyHeaders = Object.entries(ProxyHeaders.entries).map(([name, schema]) => {
  const { description, ...described } = jsonSchemaOf(schema);
  return header(name.toUpperCase(), String(description), described, schema.type !== "optional");
});

const proxyOperation = (method: string): Operation => ({
  summary: `${method.toUpperCase()} the target through an MPC-TLS session (or in proxy mode) and prove the exchange`,
  operationId: `proxy${method[0]!.toUpperCase()}${method.slice(1)}`,
  parameters: proxyHeaders,
  ...(method === "get" || method === "delete" ? {} : { requestBody: { description: "a JSON body, sent on to the target", content: json({}) } }),
  responses: {
    default: {
      description:
        "the target's answer: its status, headers and body; T-PROOF-ID names the request id when a proof follows, " +
        "T-SESSION-CLASS the session's size class, T-SESSION-RETRIED the class a GET was repeated in after overflowing",
      headers: {
        "T-PROOF-ID": { schema: { type: "string", format: "uuid" } },
        "T-SESSION-CLASS": { schema: { type: "string", pattern: "^[0-9]+/[0-9]+$" } },
        "T-SESSION-RETRIED": { schema: { type: "string", pattern: "^[0-9]+/[0-9]+$" } },
      },
    },
    ...errors(400, 401, 403, 413, 500, 502, 503, 504),
  },
});

const storePath = [
  { in: "path", name: "id", required: true, description: "stream id", schema: { type: "string" } },
  { in: "path", name: "partition", required: true, schema: { ...jsonSchemaOf(partitionSchema), type: "string", pattern: "^[0-9]+$" } },
];

function storeQueryParameters(): unknown[] {
  return Object.keys(querySchema.entries).map((name) => ({ in: "query", name, required: false, schema: entrySchema(querySchema, name) }));
}

/** The warm pool's routes. */
function poolOperations(): Record<string, Record<string, Operation>> {
  return {
    "GET /pool": {
      get: {
        summary: "the warm pool's state, the embedded notary's sessions and memory",
        operationId: "pool",
        responses: { 200: { description: "pool state (docs/api.md, Other endpoints)", content: json({ type: "object" }) }, ...errors(401, 403) },
      },
    },
    "GET /pools": {
      get: {
        summary: "what the warm pool keeps per (host, size class): pinned and automatic entries",
        operationId: "pools",
        responses: { 200: { description: "the pool's entries (docs/prover.md, The warm pool)", content: json({ type: "object" }) }, ...errors(401, 403) },
      },
    },
    "GET /prepare": {
      get: {
        summary: "keep N sessions warm for a host and size class (Verity's T-PREPARE shape); 0 stops",
        operationId: "prepare",
        parameters: [
          header("T-PREPARE", "how many sessions to keep warm; 0 stops keeping them", entrySchema(PrepareHeaders, "t-prepare"), true),
          header("T-PROXY-URL", "a target URL: its host gets the sessions, its path the learned class", { type: "string", format: "uri", pattern: "^https://" }, true),
          header("T-SESSION-CLASS", "a size class as sent/recv bytes (one of /pool's classes)", { type: "string", pattern: "^[0-9]+/[0-9]+$" }),
          header("T-MAX-SENT-DATA", "bytes requests need; picks the class", { type: "string", pattern: "^[0-9]+$" }),
          header("T-MAX-RECV-DATA", "bytes answers need; picks the class", { type: "string", pattern: "^[0-9]+$" }),
        ],
        responses: {
          200: {
            description: "what is now kept",
            content: json({ type: "object", properties: { host: { type: "string" }, class: { type: "string" }, count: { type: "integer" } }, required: ["host", "class", "count"] }),
          },
          ...errors(400, 401, 403, 502),
        },
      },
    },
    "DELETE /pool/:host": {
      delete: {
        summary: "stop keeping sessions warm for a host; its ready sessions close",
        operationId: "dropPoolHost",
        parameters: [{ in: "path", name: "host", required: true, schema: entrySchema(HostParam, "host") }],
        responses: {
          200: { description: "sessions closed", content: json({ type: "object", properties: { host: { type: "string" }, closed: { type: "integer" } }, required: ["host", "closed"] }) },
          ...errors(400, 401, 403),
        },
      },
    },
  };
}

/** The message store's routes. */
function storeOperations(): Record<string, Record<string, Operation>> {
  return {
    "GET /stores/:id/data/partitions/:partition/:queryType": {
      get: {
        summary: "messages of a stream partition (Log Store / Streamr semantics); the proofs stream holds every proof",
        description: "With API keys on, reading the proofs stream needs a key (unless PROVER_PUBLIC_PROOFS=1); other streams are open.",
        operationId: "storeQuery",
        parameters: [
          ...storePath,
          { in: "path", name: "queryType", required: true, schema: { enum: ["last", "from", "range"] } },
          ...storeQueryParameters(),
        ],
        responses: {
          200: {
            description: "messages with pagination metadata; with Accept: text/event-stream one data event per message and a final metadata event",
            content: { ...json({ type: "object" }), "text/event-stream": { schema: { type: "string" } } },
          },
          ...storeErrors(400, 401, 403, 500, 503),
        },
      },
    },
    "POST /stores/:id/data/partitions/:partition": {
      post: {
        summary: "publish messages: content entries signed by the node, or signed v32 RawMessages",
        operationId: "storePublish",
        parameters: storePath,
        requestBody: {
          required: true,
          content: json({ anyOf: [ref("PublishEntry"), { type: "array", items: ref("PublishEntry"), maxItems: 100 }] }),
        },
        responses: { 200: { description: "one result per entry", content: json({ type: "object" }) }, ...storeErrors(400, 401, 403, 500) },
      },
    },
  };
}

/** One entry per route, keyed `METHOD path` as the app lists it. */
function operations(): Record<string, Record<string, Operation>> {
  return {
    "GET /healthcheck": { get: { summary: "liveness", operationId: "healthcheck", responses: { 200: text("Ok") } } },
    "GET /info": {
      get: {
        summary: "version, node address, notary, session sizes, test trust anchor",
        operationId: "info",
        responses: {
          200: {
            description: "about this prover",
            content: json({
              type: "object",
              properties: {
                version: { type: "string" },
                nodeAddress: { type: "string" },
                notary: { anyOf: [{ type: "null" }, { allOf: [jsonSchemaOf(NotaryInfo), { type: "object", properties: { embedded: { type: "boolean" } } }] }] },
                notaries: notaryList,
                sessionSizes: jsonSchemaOf(SessionSizes),
                testTrustAnchor: { type: "boolean" },
              },
            }),
          },
        },
      },
    },
    "GET /notaryinfo": {
      get: {
        summary: "the notary's version and public key, as Verity's prover answers it",
        operationId: "notaryInfo",
        responses: {
          200: {
            description: "the notary",
            content: json({
              type: "object",
              properties: {
                version: { type: "string" },
                publicKey: { type: "string", description: "SPKI PEM" },
                ethereumAddress: { type: ["string", "null"] },
                gitCommitHash: { type: "string" },
                gitCommitTimestamp: { type: "string" },
                notaries: notaryList,
              },
              required: ["version", "publicKey", "gitCommitHash", "gitCommitTimestamp", "notaries"],
            }),
          },
          ...errors(500),
        },
      },
    },
    "GET /proof/:requestId": {
      get: {
        summary: "the proof of a request id, as one Server-Sent Event",
        description:
          "One event, then the stream ends. A proof: an unnamed event whose data is `<notary public key PEM>|<proof JSON>` " +
          "(the Proof schema). No proof will come: `event: error` whose data is the ProofStreamError schema.",
        operationId: "proofStream",
        parameters: [{ in: "path", name: "requestId", required: true, schema: entrySchema(RequestIdParam, "requestId") }],
        responses: {
          200: { description: "the event stream", content: { "text/event-stream": { schema: { type: "string" } } } },
          204: { description: "a reconnecting EventSource (Last-Event-ID: the request id): nothing more will come" },
          ...errors(400, 401, 403, 503),
        },
      },
    },
    "ALL /proxy": Object.fromEntries(PROXY_METHODS.map((method) => [method, proxyOperation(method)])),
    ...poolOperations(),
    "GET /metrics": {
      get: {
        summary: "Prometheus metrics, text format",
        operationId: "metrics",
        responses: { 200: text("Prometheus text exposition format 0.0.4"), ...errors(401, 403) },
      },
    },
    "GET /viewer": {
      get: { summary: "the proof viewer: one self-contained HTML page", operationId: "viewer", responses: { 200: text("the page", "text/html") } },
    },
    "GET /openapi.json": {
      get: { summary: "this document", operationId: "openapi", responses: { 200: { description: "OpenAPI 3.1", content: json({ type: "object" }) } } },
    },
    ...storeOperations(),
  };
}

/** `/a/:b` → `/a/{b}`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, "{$1}");

/** A route `operations` has no entry for: listed, and marked so that the test names it. */
const undescribed = (method: string): Record<string, Operation> =>
  Object.fromEntries(
    (method === "ALL" ? PROXY_METHODS : [method.toLowerCase()]).map((m) => [
      m,
      { summary: "not described yet: add it to operations() in src/openapi/document.ts", "x-undescribed": true, responses: { default: { description: "see README.md" } } },
    ]),
  );

/** The document for these routes. */
export function openApiDocument(routes: readonly AppRoute[]): Record<string, unknown> {
  const described = operations();
  const paths: Record<string, Record<string, Operation>> = {};
  for (const { method, path, access } of routes) {
    const operation = described[`${method} ${path}`] ?? undescribed(method);
    // Security comes from the access the route was mounted with, as the API key check reads it.
    if (alwaysNeedsKey(access, method)) for (const entry of Object.values(operation)) entry.security = [{ apiKey: [] }];
    // Path parameters must be declared: an undescribed route gets them as plain strings.
    if (!described[`${method} ${path}`]) {
      const parameters = [...path.matchAll(/:([A-Za-z]+)/g)].map(([, name]) => ({ in: "path", name, required: true, schema: { type: "string" } }));
      for (const entry of Object.values(operation)) if (parameters.length > 0) entry.parameters = parameters;
    }
    paths[openApiPath(path)] = { ...paths[openApiPath(path)], ...operation };
  }
  return {
    openapi: "3.1.0",
    info: { title: "tlsproof prover", version: VERSION, description: "A proving proxy over MPC-TLS. README.md and docs/api.md have the full contract." },
    paths,
    components: {
      securitySchemes: { apiKey: { type: "http", scheme: "bearer", description: "PROVER_API_KEYS, when set" } },
      schemas: {
        Error: jsonSchemaOf(ErrorReply),
        Proof: jsonSchemaOf(proofSchema),
        ProofStreamError: {
          type: "object",
          properties: { requestId: { type: "string" }, code: { type: "string" }, message: { type: "string" } },
          required: ["requestId", "code", "message"],
        },
        PublishEntry: { anyOf: [jsonSchemaOf(contentEntrySchema), jsonSchemaOf(rawMessageSchema)], description: "a content entry, or a v32 RawMessage" },
      },
    },
  };
}
