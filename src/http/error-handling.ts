import { Elysia } from "elysia";
import type * as v from "valibot";
import { AppError, type ErrorCode, errorBody, errorText, httpStatusOf, retryAfterOf } from "../core/errors.ts";
import { parseOrThrow } from "../core/schema.ts";
import type { Logger } from "../base/log.ts";

/** Parses request input with a valibot schema; the first issue becomes one 4xx message naming `what` and its key. */
export const parseInput = <S extends v.GenericSchema>(schema: S, input: unknown, code: ErrorCode, what: string): v.InferOutput<S> =>
  parseOrThrow(schema, input, code, { where: what });

/**
 * Route families answer errors in their own body shape, declared by each route group (src/http/route.ts) and
 * found by path in the prover's access table (src/prover/route-access.ts): the message store keeps the Log Store
 * reference's `{"error": "<message>"}` (`log-store`); everything else answers `{"error": {"code", "message", …}}`
 * (`coded`).
 */
export type ErrorShape = "coded" | "log-store";

/**
 * JSON error response: the status the error code maps to, the body shape of the route family, and
 * `Retry-After` when the code says the client may retry.
 */
export function errorResponse(error: AppError, { shape = "coded", headers = {} }: { shape?: ErrorShape; headers?: Record<string, string> } = {}): Response {
  const retryAfter = retryAfterOf(error.code);
  const allHeaders = retryAfter === undefined ? headers : { "retry-after": String(retryAfter), ...headers };
  const body = shape === "log-store" ? { error: error.message } : errorBody(error);
  return Response.json(body, { status: httpStatusOf(error.code), headers: allHeaders });
}

/** Elysia's own failures, named as the product's error codes. */
function frameworkError(code: unknown): AppError | undefined {
  if (code === "NOT_FOUND") return new AppError("not_found", "no such route");
  if (code === "PARSE") return new AppError("invalid_body", "the request body is not valid JSON");
  if (code === "VALIDATION") return new AppError("invalid_body", "the request does not match its schema");
  return undefined;
}

/**
 * The one place where HTTP errors are shaped: AppErrors keep their code, Elysia's own failures map to
 * codes, a request whose connection closed is logged as such, anything else is a logged 500 whose details stay in the log. `shapeOf` names the body shape of the
 * route family a path belongs to (all `coded` unless told).
 */
export function errorHandling(log: Logger, shapeOf: (pathname: string) => ErrorShape = () => "coded") {
  return new Elysia({ name: "error-handling" }).onError({ as: "global" }, ({ error, code, request }) => {
    const pathname = new URL(request.url).pathname;
    const shape = shapeOf(pathname);
    if (error instanceof AppError) return errorResponse(error, { shape });
    const known = frameworkError(code);
    if (known) return errorResponse(known, { shape });
    // A client whose connection closed mid-request (it left, or the idle limit cut it) is no failure of ours.
    if (request.signal.aborted) {
      log.info("the client's connection closed before its request was read", { path: pathname });
      return errorResponse(new AppError("invalid_body", "the connection closed before the request was read"), { shape });
    }
    log.error("unhandled error", { path: pathname, error: errorText(error) });
    return errorResponse(new AppError("internal", "internal error"), { shape });
  });
}
