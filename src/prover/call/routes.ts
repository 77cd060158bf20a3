/**
 * `ANY /proxy`, HTTP translation only: declared once (its headers by ProxyHeaders, headers.ts), the call's mode
 * looked up among the prover's (src/prover/proving/registry.ts), the request to send built, then the one proof
 * lifecycle (src/prover/proving/lifecycle.ts); the target's answer goes back to the client at once.
 */
import * as v from "valibot";
import { type ExchangeRequest, type HeaderField, isExchangeMethod } from "../../core/exchange.ts";
import { hostOf } from "../../core/target.ts";
import { AppError, httpStatusOf, toAppError } from "../../core/errors.ts";
import { type RouteGroup, type RouteInput, bindRoute, declareRoute, routeGroup } from "../../http/route.ts";
import { bodyBytes } from "../../http1/message.ts";
import type { IdleLimit } from "../../http/idle-limit.ts";
import { callerKeyDigest } from "../auth.ts";
import type { ProofDelivery } from "../delivery/proof-delivery.ts";
import type { ProofAnswer, ProofLifecycle } from "../proving/lifecycle.ts";
import type { ModeHeaders, PreparedCall, ProofCall, ProvingMode } from "../proving/mode.ts";
import type { ProvingModes } from "../proving/registry.ts";
import { ProxyHeaders, callHeadersOf, proxyHeadersPart } from "./headers.ts";
import { checkClaims } from "../proving/claim-check.ts";
import { checkQuorum } from "../proving/quorum.ts";

export interface ProxyDeps {
  modes: ProvingModes;
  lifecycle: ProofLifecycle;
  delivery: Pick<ProofDelivery, "refuse">;
  /** The mode of requests without T-PROOF-MODE (PROVER_PROOF_MODE). */
  defaultMode: string;
  /** The quorum of requests without T-QUORUM (PROVER_NOTARY_QUORUM), and the notaries there are to make one. */
  defaultQuorum: number;
  notaries: number;
  maxBodyBytes: number;
  /** True when Authorization belongs to the prover (API keys on) and must not reach the target. */
  authorizationIsOurs: boolean;
  /**
   * Lifted for this request's connection once the call is read (its proof may take tens of seconds in silence; not
   * before, so a client sending its body slowly is still cut), put back when the call ends.
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

/** `/proxy` with the headers every mode reads (headers.ts); a prover's declaration adds its modes' own (proxyRouteOffering). */
export const proxyRoute = declareRoute({
  method: "ALL",
  path: "/proxy",
  operationId: "proxy",
  summary: "send the request to the target (T-PROXY-URL) in a proof mode and prove the exchange; the proof follows at /proof/{requestId}",
  access: "key-or-scoped",
  headers: proxyHeadersPart,
  body: { schema: v.unknown(), code: "invalid_body", optional: true, notJson: "the request body must be JSON (the engine sends JSON bodies only)" },
  responses: {
    default: {
      description: "the target's answer: its status, headers and body, with the prover's headers",
      headers: {
        "T-PROOF-ID": v.pipe(v.string(), v.uuid(), v.description("the request id, when a proof follows")),
        "T-PROOF-MODE": v.pipe(v.string(), v.description("the mode the exchange was proven in")),
      } as Readonly<Record<string, v.GenericSchema>>,
    },
  },
  errors: [
    "duplicate_request_id", "unsupported_method", "payload_too_large", "session_too_large", "proxy_mode_unavailable", "mode_unavailable",
    "target_forbidden", "target_unresolvable", "target_unreachable", "response_too_large", "tls_unsupported", "target_request_failed",
    "target_encoding_refused", "target_key_update_refused", "tls_untrusted", "notary_untrusted", "notary_unavailable", "over_capacity",
    "shutting_down", "target_timeout", "session_timeout", "session_failed", "storage_failed", "internal",
  ],
});

/** An offered mode's own headers (src/prover/proving/mode.ts, ModeHeaders). */
export interface OfferedHeaders {
  mode: string;
  headers: ModeHeaders;
}

/**
 * `/proxy` as a prover offering these modes declares it: the common headers and each mode's own, read, refused and
 * documented together. A mode's request headers are optional, so the handler's view of the common ones holds.
 */
export function proxyRouteOffering(modes: readonly OfferedHeaders[]): typeof proxyRoute {
  const request: v.ObjectEntries = { ...ProxyHeaders.entries };
  const answer: Record<string, v.GenericSchema> = { ...proxyRoute.responses.default.headers };
  for (const { mode, headers } of modes) {
    for (const [name, schema] of Object.entries(headers.request)) {
      if (name in request) throw new Error(`the ${mode} mode declares ${name}, a /proxy header already`);
      if (schema.type !== "optional") throw new Error(`the ${mode} mode's header ${name} must be optional`);
      request[name] = schema;
    }
    for (const [name, schema] of Object.entries(headers.answer)) {
      if (name in answer) throw new Error(`the ${mode} mode declares ${name}, a /proxy answer header already`);
      answer[name] = schema;
    }
  }
  const declared = {
    ...proxyRoute,
    headers: { ...proxyHeadersPart, schema: v.object(request) },
    responses: { default: { ...proxyRoute.responses.default, headers: answer } },
  };
  // Only optional entries were added: what the common entries parse to is as typed.
  return declared as unknown as typeof proxyRoute;
}

/**
 * The call's values of its mode's own headers; a header of another mode is refused (it would be silently ignored,
 * and the client believe it applied).
 */
function modeHeadersOf(parsed: object, mode: string, offered: readonly OfferedHeaders[]): Record<string, unknown> {
  const values = parsed as Record<string, unknown>;
  const own: Record<string, unknown> = {};
  for (const { mode: owner, headers } of offered) {
    for (const name of Object.keys(headers.request)) {
      if (values[name] === undefined) continue;
      if (owner !== mode) throw new AppError("invalid_header", `${name.toUpperCase()} applies to ${owner} mode only (T-PROOF-MODE: ${owner})`);
      own[name] = values[name];
    }
  }
  return own;
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

/**
 * The target's answer as an HTTP response: its status, its headers (less those of the connection and those named as
 * the prover's own: a target's T-PROOF-ID would tell a client a proof follows), the de-chunked body.
 */
function answerResponse({ answer, recv, proofFollows, answerHeaders }: ProofAnswer, requestId: string, mode: string, ownHeaders: ReadonlySet<string>): Response {
  const headers = new Headers();
  for (const [name, value] of answer.headers) {
    const lower = name.toLowerCase();
    if (!DROPPED_RESPONSE_HEADERS.has(lower) && !ownHeaders.has(lower)) headers.append(name, value);
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

/** Checks the client's request beyond its headers, then has its mode check what it makes of it: nothing sent, no id taken. */
async function readCall({ request, headers: parsed, body }: RouteInput<typeof proxyRoute>, deps: ProxyDeps): Promise<ReadCall> {
  const headers = callHeadersOf(parsed);
  const method = request.method.toUpperCase();
  if (!isExchangeMethod(method)) throw new AppError("unsupported_method", `method ${method} cannot be proven; use GET, POST, PUT or DELETE`);
  const modeName = headers.mode ?? deps.defaultMode;
  const mode = deps.modes.get(modeName);
  if (!mode) throw new AppError("invalid_header", `T-PROOF-MODE must be ${deps.modes.names().join(" or ")}`);
  const modeHeaders = modeHeadersOf(parsed, modeName, deps.modes.offeredHeaders());
  checkClaims(headers, mode.facts);
  const exchange: ExchangeRequest = {
    method,
    pathAndQuery: headers.target.pathAndQuery,
    headers: forwardedHeaders(request, hostOf(headers.target), deps),
    body: await body({ maxBytes: deps.maxBodyBytes }),
  };
  const call: ProofCall = {
    ...headers,
    quorum: headers.quorum ?? deps.defaultQuorum,
    exchange,
    requestedBy: callerKeyDigest(request, deps.authorizationIsOurs),
    modeHeaders,
  };
  const prepared = mode.prepare(call);
  checkQuorum(call, prepared, mode.facts.name, deps.notaries);
  return { mode, call, prepared };
}

/**
 * A call refused before any work: when its request id is a valid one, the refusal settles that id too, so that a
 * client that subscribed first hears the refusal's code at once rather than `unknown_request` later. Load (5xx:
 * over capacity, shutting down) settles nothing: those calls are retried, and an id used before keeps its outcome.
 */
async function refusedBeforeWork(request: Request, error: unknown, deps: ProxyDeps): Promise<never> {
  const refusal = toAppError(error);
  // Read on its own: the other headers may be what was refused.
  const requestId = v.safeParse(ProxyHeaders.entries["t-request-id"], request.headers.get("t-request-id") ?? "");
  if (requestId.success && httpStatusOf(refusal.code) < 500) {
    await deps.delivery.refuse(requestId.output, refusal, callerKeyDigest(request, deps.authorizationIsOurs));
  }
  throw error;
}

/** `ANY /proxy`: reads the client's request, runs its proof in its mode, answers with the target's answer. */
export function proxyRoutes(deps: ProxyDeps): RouteGroup {
  const refused = (error: unknown, request: Request) => refusedBeforeWork(request, error, deps);
  const declaration = proxyRouteOffering(deps.modes.offeredHeaders());
  const ownHeaders = new Set(Object.keys(declaration.responses.default.headers).map((name) => name.toLowerCase()));
  async function handle(input: RouteInput<typeof proxyRoute>): Promise<Response> {
    const { mode, call, prepared } = await readCall(input, deps).catch((error: unknown) => refused(error, input.request));
    // Read whole: from here the client waits in silence for as long as the proof takes (a slow target, an MPC
    // exchange). A limit left in force would cut the connection under the running call, and a client that sends
    // it again (fetch does) would be refused its own id.
    deps.idleLimit.lift(input.request);
    try {
      return answerResponse(await deps.lifecycle.run(mode, prepared, call), call.requestId, mode.facts.name, ownHeaders);
    } finally {
      deps.idleLimit.restore(input.request);
    }
  }
  // A refusal of its headers comes before any work too: it settles the id as the others do.
  return routeGroup("proxy", [bindRoute(declaration, handle, { refused })]);
}
