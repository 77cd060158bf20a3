import { Elysia } from "elysia";
import * as v from "valibot";
import { AppError, type ErrorCode, errorBody, httpStatusOf } from "./errors.ts";
import type { Logger } from "./log.ts";

/** Parses input with a valibot schema; the first issue becomes one readable message naming its key. */
export function parseInput<S extends v.GenericSchema>(schema: S, input: unknown, code: ErrorCode, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = issue ? v.getDotPath(issue) : null;
  throw new AppError(code, `${what}${path ? ` ${path}` : ""}: ${issue?.message ?? "invalid"}`);
}

/** JSON error response with the status the error code maps to. */
export function errorResponse(error: AppError, headers: Record<string, string> = {}): Response {
  return Response.json(errorBody(error), { status: httpStatusOf(error.code), headers });
}

/**
 * The one place where HTTP errors are shaped: AppErrors keep their code, Elysia's own failures map to
 * codes, anything else is a logged 500 whose details stay in the log.
 */
export function errorHandling(log: Logger) {
  return new Elysia({ name: "error-handling" }).onError({ as: "global" }, ({ error, code, request }) => {
    if (error instanceof AppError) {
      const retry = error.code === "over_capacity" || error.code === "shutting_down";
      return errorResponse(error, retry ? { "retry-after": "5" } : {});
    }
    if (code === "NOT_FOUND") return errorResponse(new AppError("not_found", "no such route"));
    if (code === "PARSE") return errorResponse(new AppError("invalid_body", "the request body is not valid JSON"));
    if (code === "VALIDATION") return errorResponse(new AppError("invalid_body", "the request does not match its schema"));
    log.error("unhandled error", { path: new URL(request.url).pathname, error: String((error as Error)?.message ?? error) });
    return errorResponse(new AppError("internal", "internal error"));
  });
}
