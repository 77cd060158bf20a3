/**
 * A route declared once: its method and path, what it is for, the valibot schemas of its input (path parameters,
 * query, headers, JSON body), its answers and who may call it. The same declaration validates every request
 * before its handler runs, with the product's error codes (the handler receives the parsed input), tells the
 * access table who may call it (src/prover/route-access.ts), and is the route's OpenAPI operation
 * (src/openapi/operation.ts). Elysia still serves: a group of routes bound to their handlers is one plugin.
 */
import { type AnyElysia, Elysia } from "elysia";
import * as v from "valibot";
import { AppError, type ErrorCode } from "../core/errors.ts";
import type { ErrorShape } from "./error-handling.ts";
import { type IssueWording, describeIssue, parseOrThrow } from "../core/schema.ts";

export type RouteAccess =
  /** Anyone. */
  | "open"
  /** An API key: the prover's full keys (PROVER_API_KEYS), a notary's whitelisted ones. */
  | "key"
  /** A full key, or a scoped one (PROVER_API_KEYS_SCOPED), which reads only its own requests' proofs. */
  | "key-or-scoped"
  /** The message store: publishing needs a full key; reading the proofs stream too, unless PROVER_PUBLIC_PROOFS=1. */
  | "store";

/** True when every call of this method under `access` needs an API key (the store's reads depend on the stream). */
export const alwaysNeedsKey = (access: RouteAccess | undefined, method: string): boolean =>
  access === "key" || access === "key-or-scoped" || (access === "store" && method.toUpperCase() === "POST");

/** A schema of named values (path parameters, query parameters, headers): an object schema, or a pipe on one. */
export type EntriesSchema = v.GenericSchema & { readonly entries: v.ObjectEntries };

/** One part of a request, its schema and the code the route answers when the schema refuses it. */
export interface RequestPart<S extends v.GenericSchema = v.GenericSchema> {
  readonly schema: S;
  readonly code: ErrorCode;
  /** The code for a refused entry where it is not `code` (`/proxy`: T-REQUEST-ID is `invalid_request_id`). */
  readonly entryCodes?: Readonly<Record<string, ErrorCode>>;
  /** How a refusal is worded (src/core/schema.ts); by default `<path>: <message>`. */
  readonly wording?: IssueWording;
}

export interface BodyPart<S extends v.GenericSchema = v.GenericSchema> extends RequestPart<S> {
  /** The message for a body that is not JSON at all. */
  readonly notJson?: string;
  /** An empty (or blank) body is no body: the handler gets undefined (a `/proxy` GET); otherwise it is not JSON. */
  readonly optional?: boolean;
  /**
   * What the document shows of a schema that checks in code what JSON Schema cannot say (a raw transform): a
   * plain schema of the same shape. Without it the document shows `schema`.
   */
  readonly shape?: v.GenericSchema;
}

/** An answer of a route that succeeded: what it is, its body's schema per media type (text: `v.string()`), its headers. */
export interface Answer {
  readonly description: string;
  readonly content?: Readonly<Record<string, v.GenericSchema>>;
  readonly headers?: Readonly<Record<string, v.GenericSchema>>;
}

/** `ALL`: any method, the handler decides (`/proxy` refuses those the engine cannot send); documented as GET, POST, PUT, DELETE. */
export type RouteMethod = "GET" | "POST" | "PUT" | "DELETE" | "ALL";

export interface RouteDeclaration {
  readonly method: RouteMethod;
  /** Elysia's form: `/proof/:requestId`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly access: RouteAccess;
  readonly params?: RequestPart<EntriesSchema>;
  readonly query?: RequestPart<EntriesSchema>;
  /** Header names in lower case; only the headers named here are read. */
  readonly headers?: RequestPart<EntriesSchema>;
  readonly body?: BodyPart;
  /** What it answers when it succeeds, by status; `default`: a status it passes on (`/proxy`: the target's). */
  readonly responses: Readonly<Partial<Record<200 | 204 | "default", Answer>>>;
  /**
   * The codes its handler may answer with. Its parts' codes are added, and `unauthorized` and `forbidden` for a
   * route behind a key; the document lists them by status.
   */
  readonly errors?: readonly ErrorCode[];
}

/** A path's parameter names: `/a/:b/:c` → b, c. */
export const pathParameters = (path: string): string[] => [...path.matchAll(/:([A-Za-z]+)/g)].map((match) => match[1]!);

/**
 * A route's declaration, checked once as the module loads: every path parameter has an entry in the params
 * schema and every entry is a path parameter, so the document and the handler see the same names.
 */
export function declareRoute<const D extends RouteDeclaration>(declaration: D): D {
  const inPath = pathParameters(declaration.path).sort();
  const declared = Object.keys(declaration.params?.schema.entries ?? {}).sort();
  if (inPath.join() !== declared.join()) {
    throw new Error(`${declaration.method} ${declaration.path}: path parameters [${inPath}] but params schema [${declared}]`);
  }
  return declaration;
}

type Parsed<P> = P extends RequestPart<infer S> ? v.InferOutput<S> : undefined;

/** How much of a body a handler reads: over `maxBytes` is payload_too_large, from its Content-Length before a byte is read. */
export interface BodyLimit {
  maxBytes: number;
}

/** What a handler receives: each declared part parsed; the body read when the handler asks for it. */
export interface RouteInput<D extends RouteDeclaration> {
  params: Parsed<D["params"]>;
  query: Parsed<D["query"]>;
  headers: Parsed<D["headers"]>;
  /**
   * Reads the JSON body and validates it with the declared schema. Read when the handler asks, so that what it
   * refuses from the request line (a stream nobody may write) is refused before a body is read.
   */
  body(limit?: BodyLimit): Promise<Parsed<D["body"]>>;
  request: Request;
}

type JsonAnswer<D extends RouteDeclaration> = D["responses"] extends { 200: { content: { "application/json": infer S extends v.GenericSchema } } }
  ? v.InferOutput<S>
  : never;
/** A handler answers a Response, or the JSON body its declaration describes. */
export type RouteReply<D extends RouteDeclaration> = Response | JsonAnswer<D>;

/** Query parameters as one value each: one given twice is malformed, never "take one of them". */
function queryOf(url: string, part: RequestPart): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [name, value] of new URL(url).searchParams) {
    if (Object.hasOwn(query, name)) throw new AppError(part.code, `Query parameter "${name}" given more than once`);
    query[name] = value;
  }
  return query;
}

/** The headers the schema names (case does not matter); absent ones are undefined. */
const headersOf = (headers: Headers, part: RequestPart<EntriesSchema>): Record<string, string | undefined> =>
  Object.fromEntries(Object.keys(part.schema.entries).map((name) => [name, headers.get(name) ?? undefined]));

/**
 * A part's input parsed, or the AppError of its first refusal. The first refusal in the schema's order ends the
 * parse: a later entry (a transform that throws its own refusal) is not read.
 */
function parsePart(part: RequestPart | undefined, input: unknown): unknown {
  if (part === undefined) return undefined;
  const parsed = v.safeParse(part.schema, input, { abortEarly: true });
  if (parsed.success) return parsed.output;
  const [issue] = parsed.issues;
  const entry = issue.path?.[0]?.key;
  const code = (typeof entry === "string" && part.entryCodes?.[entry]) || part.code;
  throw new AppError(code, describeIssue(issue, part.wording));
}

/** The headers a part names, parsed as its route would parse them. */
export const parseHeaders = <P extends RequestPart<EntriesSchema>>(part: P, headers: Headers): Parsed<P> => parsePart(part, headersOf(headers, part)) as Parsed<P>;

async function bodyText(request: Request, limit: BodyLimit | undefined): Promise<string> {
  if (limit === undefined) return request.text();
  const tooLarge = () => new AppError("payload_too_large", `the request body exceeds ${limit.maxBytes} bytes`);
  if (Number(request.headers.get("content-length") ?? 0) > limit.maxBytes) throw tooLarge();
  // Chunked bodies carry no length: counted as they are read.
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.length > limit.maxBytes) throw tooLarge();
  return new TextDecoder().decode(bytes);
}

async function readBody(part: BodyPart | undefined, request: Request, limit: BodyLimit | undefined): Promise<unknown> {
  if (part === undefined) return undefined;
  const text = await bodyText(request, limit);
  if (part.optional && text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError(part.code, part.notJson ?? "the request body is not valid JSON");
  }
  return parseOrThrow(part.schema, value, part.code, part.wording);
}

/**
 * A request's input as the route declares it, parsed in order (path parameters, query, headers), or the
 * AppError of the first part its schema refuses. `params` are the path parameters as the router decoded them.
 */
export function validateRequest<D extends RouteDeclaration>(route: D, request: Request, params: Record<string, string | undefined>): RouteInput<D> {
  const parsedParams = parsePart(route.params, params);
  const query = route.query && parsePart(route.query, queryOf(request.url, route.query));
  const headers = route.headers && parseHeaders(route.headers, request.headers);
  return {
    params: parsedParams,
    query,
    headers,
    body: (limit?: BodyLimit) => readBody(route.body, request, limit),
    request,
  } as RouteInput<D>;
}

/** What a bound route reads of Elysia's context: the path parameters as the router decoded them, the request. */
interface RouteContext {
  params: Record<string, string | undefined>;
  request: Request;
}

/** A declared route with its handler. */
export interface BoundRoute {
  readonly declaration: RouteDeclaration;
  readonly run: (context: RouteContext) => Promise<unknown>;
}

export interface BindOptions {
  /**
   * Called with what the declaration refused of a request, before the handler would run; what it throws is the
   * answer (`/proxy` settles a valid request id with the refusal first). By default the refusal is thrown as it is.
   */
  refused?(error: unknown, request: Request): Promise<never>;
}

export function bindRoute<const D extends RouteDeclaration>(
  declaration: D,
  handler: (input: RouteInput<D>) => RouteReply<D> | Promise<RouteReply<D>>,
  options: BindOptions = {},
): BoundRoute {
  const validated = (params: Record<string, string | undefined>, request: Request): RouteInput<D> | Promise<never> => {
    try {
      return validateRequest(declaration, request, params);
    } catch (error) {
      if (options.refused) return options.refused(error, request);
      throw error;
    }
  };
  return { declaration, run: async ({ params, request }) => handler(await validated(params, request)) };
}

/** Routes served together (an Elysia plugin), each declared, and the body shape their errors take. */
export type RouteGroup = AnyElysia & {
  readonly declarations: readonly RouteDeclaration[];
  readonly errorShape: ErrorShape;
};

export function routeGroup(name: string, routes: readonly BoundRoute[], errorShape: ErrorShape = "coded"): RouteGroup {
  const plugin: AnyElysia = new Elysia({ name });
  // Bodies are read by the declaration (readBody), with its own refusals; Elysia parses none.
  for (const { declaration, run } of routes) {
    plugin.route(declaration.method, declaration.path, (context: Record<string, unknown>) => run(context as unknown as RouteContext), { parse: "none" });
  }
  return Object.assign(plugin, { declarations: routes.map((route) => route.declaration), errorShape });
}

/** A route as the app lists it, with what was declared of it; none of that for a route nobody declared. */
export interface DescribedRoute {
  method: string;
  path: string;
  access?: RouteAccess;
  errorShape?: ErrorShape;
  declaration?: RouteDeclaration;
}

const routeKey = (method: string, path: string): string => `${method} ${path}`;

/** A group's routes as it declares them. */
export const groupRoutes = (group: RouteGroup): DescribedRoute[] =>
  group.declarations.map((declaration) => ({ method: declaration.method, path: declaration.path, access: declaration.access, errorShape: group.errorShape, declaration }));

/** The app's routes (as its router lists them) with what `known` says of each; a route it does not name, bare. */
export function describeRoutes(routes: readonly { method: string; path: string }[], known: readonly DescribedRoute[]): DescribedRoute[] {
  const byKey = new Map(known.map((route) => [routeKey(route.method, route.path), route]));
  return routes.map(({ method, path }) => byKey.get(routeKey(method, path)) ?? { method, path });
}
