import { inOptionWords } from "./callers-words.ts";
import { type ErrorCode, isErrorCode } from "../core/errors.ts";
import { type TargetResponse, TlsproofError } from "./errors.ts";

/** A fetched response with its body read, for the caller to use after the connection is gone. */
export async function readResponse(response: Response): Promise<TargetResponse> {
  const body = new Uint8Array(await response.arrayBuffer());
  return {
    status: response.status,
    headers: response.headers,
    body,
    text: () => new TextDecoder().decode(body),
    json: <T>() => JSON.parse(new TextDecoder().decode(body)) as T,
  };
}

/** The `{"error": {"code", "message"}}` of a prover error answer, or undefined when the body is not one. */
export function proverError(response: TargetResponse): { code: ErrorCode; message: string } | undefined {
  if (response.status < 400 || !response.headers.get("content-type")?.startsWith("application/json")) return undefined;
  try {
    const { error } = response.json<{ error?: { code?: unknown; message?: unknown } }>();
    if (typeof error?.code === "string" && isErrorCode(error.code) && typeof error.message === "string") {
      return { code: error.code, message: error.message };
    }
  } catch {
    // Not JSON: not the prover's error shape.
  }
  return undefined;
}

/** Seconds from a `Retry-After` header (delta-seconds form, as the prover sends it), or undefined. */
export function retryAfterS(headers: Headers): number | undefined {
  const value = headers.get("retry-after");
  return value !== null && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}

/** A prover answer that is an error (its code, or bad_response when it is not the prover's error shape). */
export async function errorOf(response: Response, what: string, requestId?: string): Promise<TlsproofError> {
  const answer = await readResponse(response);
  const known = proverError(answer);
  const details = { status: answer.status, requestId, retryAfterS: retryAfterS(answer.headers) };
  if (known) return new TlsproofError(known.code, inOptionWords(known.message), details);
  return new TlsproofError("bad_response", `${what}: unexpected answer ${answer.status}`, details);
}
