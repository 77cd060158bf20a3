/**
 * A declared route's OpenAPI operation (src/http/route.ts): its parameters and body from the schemas it validates
 * with, its answers, and its errors by status with the codes behind each, in its group's error shape.
 */
import * as v from "valibot";
import { type ErrorCode, httpStatusOf, retryAfterOf } from "../core/errors.ts";
import type { ErrorShape } from "../http/error-handling.ts";
import type { Answer, EntriesSchema, RequestPart, RouteDeclaration } from "../http/route.ts";
import { ErrorReply } from "../protocol/notary.ts";
import type { JsonSchema, SchemaConverter } from "./json-schema.ts";

export type Operation = Record<string, unknown>;

/** The body of an error in each shape (src/http/error-handling.ts, errorResponse), named as the document's components. */
export const errorBodies = { Error: ErrorReply, StoreError: v.object({ error: v.string() }) };
const errorBodyOf: Record<ErrorShape, keyof typeof errorBodies> = { coded: "Error", "log-store": "StoreError" };

const OPTIONAL_TYPES = new Set(["optional", "exact_optional", "nullish", "undefinedable"]);

/** Each entry of a part's schema as one parameter; a `description` in its schema describes the parameter. */
function parameters(place: "path" | "query" | "header", part: RequestPart<EntriesSchema> | undefined, schemas: SchemaConverter): JsonSchema[] {
  if (part === undefined) return [];
  return Object.entries(part.schema.entries).map(([name, entry]) => {
    const { description, ...schema } = schemas.of(entry, "input");
    return { in: place, name, required: place === "path" || !OPTIONAL_TYPES.has(entry.type), ...(description === undefined ? {} : { description }), schema };
  });
}

function answer({ description, content, headers }: Answer, schemas: SchemaConverter): JsonSchema {
  const schemasOf = (entries: Readonly<Record<string, v.GenericSchema>>) => Object.fromEntries(Object.entries(entries).map(([name, schema]) => [name, { schema: schemas.of(schema) }]));
  return { description, ...(content === undefined ? {} : { content: schemasOf(content) }), ...(headers === undefined ? {} : { headers: schemasOf(headers) }) };
}

/** Every code a route may answer with: its parts', the API key check's (`keyRefusals`) behind a key, its handler's. */
export function errorCodesOf(route: RouteDeclaration, keyRefusals: readonly ErrorCode[]): ErrorCode[] {
  const parts = [route.params, route.query, route.headers, route.body].flatMap((part) => (part ? [part.code, ...Object.values(part.entryCodes ?? {})] : []));
  return [...new Set([...parts, ...(route.access === "open" ? [] : keyRefusals), ...(route.errors ?? [])])];
}

/** One response per status, naming the codes that answer with it. */
function errorResponses(codes: readonly ErrorCode[], shape: ErrorShape): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(httpStatusOf(code), [...(byStatus.get(httpStatusOf(code)) ?? []), code]);
  const body = { "application/json": { schema: { $ref: `#/components/schemas/${errorBodyOf[shape]}` } } };
  const retryAfter = { "Retry-After": { description: "seconds after which the call may be tried again", schema: { type: "integer" } } };
  return Object.fromEntries(
    [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([status, statusCodes]) => [
        String(status),
        { description: `error codes: ${statusCodes.join(", ")}`, content: body, ...(statusCodes.some((code) => retryAfterOf(code) !== undefined) ? { headers: retryAfter } : {}) },
      ]),
  );
}

/** How an app's document reads its routes: their schemas, and what its API key check refuses a call with. */
export interface OperationContext {
  schemas: SchemaConverter;
  keyRefusals: readonly ErrorCode[];
}

export function operationOf(route: RouteDeclaration, shape: ErrorShape, { schemas, keyRefusals }: OperationContext): Operation {
  const parameterList = [...parameters("path", route.params, schemas), ...parameters("query", route.query, schemas), ...parameters("header", route.headers, schemas)];
  const body = route.body && { required: !route.body.optional, content: { "application/json": { schema: schemas.of(route.body.shape ?? route.body.schema, "input") } } };
  const answers = Object.fromEntries(Object.entries(route.responses).map(([status, declared]) => [status, answer(declared, schemas)]));
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description === undefined ? {} : { description: route.description }),
    ...(parameterList.length === 0 ? {} : { parameters: parameterList }),
    ...(body ? { requestBody: body } : {}),
    responses: { ...answers, ...errorResponses(errorCodesOf(route, keyRefusals), shape) },
  };
}

/** The methods a route of any method (`ALL`) is documented for: those a proof can be made of. */
export const ANY_METHOD = ["get", "post", "put", "delete"] as const;

/** A declared route's operations by lower-case method: one, or one per method for `ALL` (a body only where one is sent). */
export function operationsOf(route: RouteDeclaration, shape: ErrorShape, context: OperationContext): Record<string, Operation> {
  const operation = operationOf(route, shape, context);
  if (route.method !== "ALL") return { [route.method.toLowerCase()]: operation };
  const { requestBody, ...withoutBody } = operation;
  return Object.fromEntries(
    ANY_METHOD.map((method) => [
      method,
      { ...withoutBody, operationId: `${route.operationId}${method[0]!.toUpperCase()}${method.slice(1)}`, ...(requestBody !== undefined && (method === "post" || method === "put") ? { requestBody } : {}) },
    ]),
  );
}
