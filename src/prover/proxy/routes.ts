/**
 * `ANY /proxy`, HTTP translation only: its headers parsed once (headers.ts), the call's mode looked up among the
 * prover's (src/prover/proving/registry.ts), the request to send built, then the one proof lifecycle
 * (src/prover/proving/lifecycle.ts); the target's answer goes back to the client at once.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { type ExchangeRequest, type HeaderField, isExchangeMethod } from "../../core/exchange.ts";
import { requestIdSchema } from "../../core/request-id.ts";
import { hostOf } from "../../core/target.ts";
import { AppError, httpStatusOf, toAppError } from "../../errors.ts";
import { bodyBytes } from "../../http1/message.ts";
import type { IdleLimit } from "../../idle-limit.ts";
import { callerKeyDigest } from "../auth.ts";
import type { ProofDelivery } from "../delivery/proof-delivery.ts";
import type { ProofAnswer, ProofLifecycle } from "../proving/lifecycle.ts";
import type { PreparedCall, ProofCall, ProvingMode } from "../proving/mode.ts";
import type { ProvingModes } from "../proving/registry.ts";
import { parseProxyHeaders } from "./headers.ts";

export interface ProxyDeps {
  modes: ProvingModes;
  lifecycle: ProofLifecycle;
  delivery: Pick<ProofDelivery, "refuse">;
  /** The mode of requests without T-PROOF-MODE (PROVER_PROOF_MODE). */
  defaultMode: string;
  maxBodyBytes: number;
  /** True when Authorization belongs to the prover (API keys on) and must not reach the target. */
  authorizationIsOurs: boolean;
  /**
   * Lifted for this request's connection once its exchange goes quiet (MPC: silent for tens of seconds; not before,
   * so a client sending its body slowly is still cut), put back when the call ends.
   */
  idleLimit: IdleLimit;
  /** Headers that identify the end user, never forwarded (src/prover/exchange/identifying-headers.ts). */
  identifyingHeaders: ReadonlySet<string>;
}

/** Headers never forwarded: hop-by-hop ones, those the prover sets itself, and its own `t-*` controls. */
const DROPPED_REQUEST_HEADERS = new Set([
  "host", "user-agent", "accept-encoding", "content-length", "connection", "keep-alive", "proxy-connection",
  "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "expect",
]);
/** Response headers that describe the connection to the target rather than the answer. */
const DROPPED_RESPONSE_HEADERS = new Set([
  "connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "trailer", "upgrade", "te",
]);

async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > maxBytes) throw new AppError("payload_too_large", `the request body exceeds ${maxBytes} bytes`);
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.length > maxBytes) throw new AppError("payload_too_large", `the request body exceeds ${maxBytes} bytes`);
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError("invalid_body", "the request body must be JSON (the engine sends JSON bodies only)");
  }
}

function forwardedHeaders(request: Request, host: string, deps: ProxyDeps): HeaderField[] {
  const headers: HeaderField[] = [["host", host]];
  request.headers.forEach((value, name) => {
    const lower = name.toLowerCase();
    if (DROPPED_REQUEST_HEADERS.has(lower) || deps.identifyingHeaders.has(lower) || lower.startsWith("t-")) return;
    if (lower === "authorization" && deps.authorizationIsOurs) return;
    headers.push([lower, value]);
  });
  headers.push(["accept-encoding", "identity"], ["connection", "close"]);
  return headers;
}

/** The target's answer as an HTTP response: its status, its headers (less those of the connection), the de-chunked body. */
function answerResponse({ answer, recv, proofFollows, answerHeaders }: ProofAnswer, requestId: string, mode: string): Response {
  const headers = new Headers();
  for (const [name, value] of answer.headers) {
    if (!DROPPED_RESPONSE_HEADERS.has(name.toLowerCase())) headers.append(name, value);
  }
  if (proofFollows) headers.set("t-proof-id", requestId);
  headers.set("t-proof-mode", mode);
  for (const [name, value] of answerHeaders) headers.set(name, value);
  return new Response(bodyBytes(recv), { status: answer.status, headers });
}

/** A /proxy call read and checked, and prepared by its mode: every refusal here comes before any work. */
interface ReadCall {
  mode: ProvingMode;
  call: ProofCall;
  prepared: PreparedCall;
}

/** Reads and checks the client's request, then has its mode check what it makes of it: nothing sent, no id taken. */
async function readCall(request: Request, deps: ProxyDeps): Promise<ReadCall> {
  const headers = parseProxyHeaders(request.headers);
  const method = request.method.toUpperCase();
  if (!isExchangeMethod(method)) throw new AppError("unsupported_method", `method ${method} cannot be proven; use GET, POST, PUT or DELETE`);
  const modeName = headers.mode ?? deps.defaultMode;
  const mode = deps.modes.get(modeName);
  if (!mode) throw new AppError("invalid_header", `T-PROOF-MODE ${modeName} is not offered by this prover`);
  const body = await readJsonBody(request, deps.maxBodyBytes);
  const exchange: ExchangeRequest = { method, pathAndQuery: headers.target.pathAndQuery, headers: forwardedHeaders(request, hostOf(headers.target), deps), body };
  const call: ProofCall = {
    ...headers,
    exchange,
    requestedBy: callerKeyDigest(request, deps.authorizationIsOurs),
    goingQuiet: () => deps.idleLimit.lift(request),
  };
  return { mode, call, prepared: mode.prepare(call) };
}

/**
 * A call refused before any work: when its request id is a valid one, the refusal settles that id too, so that a
 * client that subscribed first hears the refusal's code at once rather than `unknown_request` later. Load (5xx:
 * over capacity, shutting down) settles nothing: those calls are retried, and an id used before keeps its outcome.
 */
async function refusedBeforeWork(request: Request, error: unknown, deps: ProxyDeps): Promise<never> {
  const refusal = toAppError(error);
  const requestId = v.safeParse(requestIdSchema(""), request.headers.get("t-request-id") ?? "");
  if (requestId.success && httpStatusOf(refusal.code) < 500) {
    await deps.delivery.refuse(requestId.output, refusal, callerKeyDigest(request, deps.authorizationIsOurs));
  }
  throw error;
}

/** `ANY /proxy`: reads the client's request, runs its proof in its mode, answers with the target's answer. */
export function proxyRoutes(deps: ProxyDeps) {
  async function handle(request: Request): Promise<Response> {
    const { mode, call, prepared } = await readCall(request, deps).catch((error: unknown) => refusedBeforeWork(request, error, deps));
    try {
      return answerResponse(await deps.lifecycle.run(mode, prepared, call), call.requestId, mode.facts.name);
    } finally {
      deps.idleLimit.restore(request);
    }
  }

  return new Elysia({ name: "proxy" }).all("/proxy", ({ request }) => handle(request), { parse: "none" });
}
