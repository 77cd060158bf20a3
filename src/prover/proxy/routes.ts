import { Elysia } from "elysia";
import type { ExchangeMethod, ExchangeRequest } from "../../core/exchange.ts";
import * as v from "valibot";
import { AppError, httpStatusOf, toAppError } from "../../errors.ts";
import { bodyBytes } from "../../http1/message.ts";
import { parseRedactionRequest } from "../../redaction/index.ts";
import { requestedSizes } from "../exchange/requested-sizes.ts";
import { className, endpointKey, planSession, requestBytes } from "../pool/size-classes.ts";
import { type SessionAnswer, type SessionDeps, runProofSession } from "../mpc/session-lifecycle.ts";
import type { IdleLimit } from "../../idle-limit.ts";
import { type Target, parseTargetUrl } from "../../core/target.ts";
import type { RedactionPattern } from "../../redaction/patterns.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import { callerKeyDigest } from "../auth.ts";
import { parseOrThrow } from "../../schema.ts";
import { requestIdSchema } from "../../core/request-id.ts";
import type { ProofMode } from "../../proof/format.ts";
import type { ProxyCallKind } from "../../metrics/prover.ts";
import { refuseRequestPatterns } from "../proxy-mode/hidden-request.ts";
import { parseModeHeaders } from "../proxy-mode/mode.ts";
import { type ProxyModeDeps, runProxyProof } from "../proxy-mode/run.ts";

export interface ProxyDeps extends SessionDeps, Omit<ProxyModeDeps, keyof SessionDeps> {
  /** The mode of requests without T-PROOF-MODE (PROVER_PROOF_MODE). */
  defaultMode: ProofMode;
  maxBodyBytes: number;
  /** True when Authorization belongs to the prover (API keys on) and must not reach the target. */
  authorizationIsOurs: boolean;
  /**
   * Lifted for this request's connection once MPC starts (silent for tens of seconds; not before, so a client
   * sending its body slowly is still cut), put back when the call ends.
   */
  idleLimit: IdleLimit;
  /** Starts timing a call (an MPC one by the sizes of its session); the result ends it. */
  timeProxy(call: ProxyCallKind): (result: "answered" | "failed") => void;
  /** A GET whose answer overflowed its session is repeated once in a class that fits. */
  repeatTooLarge: boolean;
  /** Headers that identify the end user, never forwarded (src/prover/exchange/identifying-headers.ts). */
  identifyingHeaders: ReadonlySet<string>;
  /** Most answer bytes in proxy mode (PROVER_PROXY_MAX_RECV_DATA); a client may announce less (T-MAX-RECV-DATA). */
  proxyMaxRecvData: number;
}

const ENGINE_METHODS = new Set<string>(["GET", "POST", "PUT", "DELETE"]);

/** Headers never forwarded: hop-by-hop ones, those the prover sets itself, and its own `t-*` controls. */
const DROPPED_REQUEST_HEADERS = new Set([
  "host", "user-agent", "accept-encoding", "content-length", "connection", "keep-alive", "proxy-connection",
  "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "expect",
]);
/** Response headers that describe the MPC connection rather than the answer. */
const DROPPED_RESPONSE_HEADERS = new Set([
  "connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "trailer", "upgrade", "te",
]);

function parseProveFailed(value: string | null): boolean {
  if (value === null) return false;
  const flag = value.trim().toLowerCase();
  if (flag === "true" || flag === "1") return true;
  if (flag === "false" || flag === "0") return false;
  throw new AppError("invalid_header", "T-PROVE-FAILED-REQ must be true or false");
}

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

function forwardedHeaders(request: Request, host: string, deps: ProxyDeps): [string, string][] {
  const headers: [string, string][] = [["host", host]];
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
function answerResponse(answer: Pick<SessionAnswer, "response" | "recv" | "proofFollows">, requestId: string, extra: [string, string][]): Response {
  const headers = new Headers();
  for (const [name, value] of answer.response.headers) {
    if (!DROPPED_RESPONSE_HEADERS.has(name.toLowerCase())) headers.append(name, value);
  }
  if (answer.proofFollows) headers.set("t-proof-id", requestId);
  for (const [name, value] of extra) headers.set(name, value);
  return new Response(bodyBytes(answer.recv), { status: answer.response.status, headers });
}

/** Ends a call's timer with its result: the target's answer, or the error it failed with. */
async function timed<T>(done: (result: "answered" | "failed") => void, call: Promise<T>): Promise<T> {
  try {
    const answer = await call;
    done("answered");
    return answer;
  } catch (error) {
    done("failed");
    throw error;
  }
}

/** A /proxy call as read and checked before any work: what runs it in either mode. */
interface ProxyCall {
  requestId: string;
  target: Target;
  host: string;
  method: string;
  mode: ProofMode;
  revealRequest: boolean;
  patterns: RedactionPattern[];
  allowUnmatched: boolean;
  proveFailed: boolean;
  exchange: ExchangeRequest;
  /** The sizes an MPC call announced (T-MAX-*); proxy mode has no session to size. */
  announced: Partial<SessionSizes>;
  requestedBy?: string;
}

/** Reads and checks the client's request: every refusal here comes before any work (nothing sent, no id taken). */
async function readProxyCall(request: Request, deps: ProxyDeps): Promise<ProxyCall> {
  const headers = request.headers;
  const target = parseTargetUrl(headers.get("t-proxy-url"));
  const requestId = parseOrThrow(requestIdSchema("T-REQUEST-ID must be a UUID"), headers.get("t-request-id") ?? "", "invalid_request_id", { messageOnly: true });
  const { patterns, allowUnmatched } = parseRedactionRequest(headers);
  const proveFailed = parseProveFailed(headers.get("t-prove-failed-req"));
  const method = request.method.toUpperCase();
  if (!ENGINE_METHODS.has(method)) {
    throw new AppError("unsupported_method", `method ${method} cannot be proven; use GET, POST, PUT or DELETE`);
  }
  const { mode, revealRequest } = parseModeHeaders(headers, deps.defaultMode);
  if (mode === "proxy" && !revealRequest) refuseRequestPatterns(patterns);
  const host = target.port === 443 ? target.serverName : `${target.serverName}:${target.port}`;
  const body = await readJsonBody(request, deps.maxBodyBytes);
  const exchange = { method: method as ExchangeMethod, pathAndQuery: target.pathAndQuery, headers: forwardedHeaders(request, host, deps), body };
  const announced = mode === "mpc" ? requestedSizes(headers, deps.sessions.limits) : {};
  const requestedBy = callerKeyDigest(request, deps.authorizationIsOurs);
  return { requestId, target, host, method, mode, revealRequest, patterns, allowUnmatched, proveFailed, exchange, announced, requestedBy };
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

/** `ANY /proxy`: reads the client's request, runs the proof session, answers with the target's answer. */
export function proxyRoutes(deps: ProxyDeps) {
  async function handle(request: Request): Promise<Response> {
    const call = await readProxyCall(request, deps).catch((error: unknown) => refusedBeforeWork(request, error, deps));
    const { requestId, target, host, method, mode, exchange, patterns, allowUnmatched, proveFailed, requestedBy } = call;
    if (mode === "proxy") {
      // Proxy mode has no session to size: T-MAX-RECV-DATA bounds the answer, and so what the proof reserves.
      const announced = requestedSizes(request.headers, { maxSentData: Number.MAX_SAFE_INTEGER, maxRecvData: deps.proxyMaxRecvData }).maxRecvData;
      const maxRecv = announced === undefined
        ? { maxRecvBytes: deps.proxyMaxRecvData, maxRecvSetting: "PROVER_PROXY_MAX_RECV_DATA" as const }
        : { maxRecvBytes: announced, maxRecvSetting: "T-MAX-RECV-DATA" as const };
      const proof = runProxyProof(deps, { requestId, target, exchange, patterns, allowUnmatched, proveFailed, revealRequest: call.revealRequest, requestedBy, ...maxRecv });
      const answer = await timed(deps.timeProxy({ mode }), proof);
      return answerResponse(answer, requestId, [["t-proof-mode", "proxy"]]);
    }
    const endpoint = endpointKey(host, method, target.pathAndQuery);
    const canRepeat = method === "GET" && deps.repeatTooLarge;
    const need = planSession({
      classes: deps.sessions.classes,
      defaultClass: deps.sessions.defaultClass,
      announced: call.announced,
      requestBytes: requestBytes(exchange),
      learnedRecv: deps.endpointSizes.expected(endpoint),
      canRepeat,
    });
    const session = runProofSession(deps, {
      requestId,
      target,
      sizing: { need, endpoint, canRepeat },
      exchange,
      patterns,
      allowUnmatched,
      proveFailed,
      onMpcStart: () => deps.idleLimit.lift(request),
      requestedBy,
    }).finally(() => deps.idleLimit.restore(request));
    const answer = await timed(deps.timeProxy({ mode, sizes: need.class }), session);
    const sizes: [string, string][] = [["t-session-class", className(answer.sessionSizes)]];
    if (answer.repeatedIn) sizes.push(["t-session-retried", className(answer.repeatedIn)]);
    return answerResponse(answer, requestId, [["t-proof-mode", "mpc"], ...sizes]);
  }

  return new Elysia({ name: "proxy" }).all("/proxy", ({ request }) => handle(request), { parse: "none" });
}
