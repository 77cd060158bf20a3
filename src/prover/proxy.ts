import { Elysia } from "elysia";
import type { Method } from "tlsn-wasm";
import type { LoopbackBridge } from "../engine/bridge.ts";
import { type ProverSession, closeProverSession, revealTranscript, sendRequest } from "../engine/session.ts";
import { AppError, toAppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { Proof } from "../proof/format.ts";
import { bodyBytes } from "../http1/message.ts";
import { computeRedactions, parseRedactions, revealedRanges } from "../redaction/index.ts";
import type { SessionSlots } from "./capacity.ts";
import type { NotaryClient } from "./notary-client.ts";
import type { SessionSource } from "./pool.ts";
import { requestedSizes } from "./requested-sizes.ts";
import type { ProofHub } from "./proof-hub.ts";
import { type SessionRun, startRun, within } from "./session-run.ts";
import { type TargetPolicy, parseTargetUrl, resolveTarget } from "./target.ts";

export interface ProxyDeps {
  notary: NotaryClient;
  bridge: LoopbackBridge;
  hub: ProofHub;
  sessions: SessionSource;
  policy: TargetPolicy;
  maxBodyBytes: number;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  sessionTimeoutMs: number;
  slots: SessionSlots;
  /** Called with every proof made (the message store keeps them). */
  onProof: (proof: Proof) => Promise<void>;
  /** True when Authorization belongs to the prover (API keys on) and must not reach the target. */
  authorizationIsOurs: boolean;
  log: Logger;
}

const ENGINE_METHODS = new Set<string>(["GET", "POST", "PUT", "DELETE"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

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

function forwardedHeaders(request: Request, host: string, authorizationIsOurs: boolean): [string, string][] {
  const headers: [string, string][] = [["host", host]];
  request.headers.forEach((value, name) => {
    const lower = name.toLowerCase();
    if (DROPPED_REQUEST_HEADERS.has(lower) || lower.startsWith("t-")) return;
    if (lower === "authorization" && authorizationIsOurs) return;
    headers.push([lower, value]);
  });
  headers.push(["accept-encoding", "identity"], ["connection", "close"]);
  return headers;
}

/** `ANY /proxy`: fetch the target over MPC-TLS, answer at once, and make the proof in the background. */
export function proxyRoutes(deps: ProxyDeps) {
  const { log } = deps;

  async function prove(
    session: ProverSession,
    run: SessionRun,
    requestId: string,
    exchange: { sent: Uint8Array; recv: Uint8Array },
    redaction: ReturnType<typeof computeRedactions>,
  ) {
    const started = performance.now();
    try {
      await within(
        run,
        revealTranscript(session, {
          sent: revealedRanges(exchange.sent.length, redaction.hidden.sent),
          recv: revealedRanges(exchange.recv.length, redaction.hidden.recv),
        }),
      );
      const proof = await deps.notary.attest(session.notarySessionId, { requestId, redactions: redaction.declared });
      deps.hub.settle(requestId, { event: "proof", proof });
      log.info("proof made", { requestId, ms: Math.round(performance.now() - started) });
      await deps.onProof(proof).catch((error: unknown) =>
        log.error("storing the proof failed", { requestId, error: toAppError(error).message }),
      );
    } catch (error) {
      const failure = run.failure ?? toAppError(error, "session_failed");
      log.warn("proof failed", { requestId, code: failure.code, error: failure.message });
      deps.hub.settle(requestId, { event: "error", requestId, code: failure.code, message: failure.message });
    } finally {
      run.end();
    }
  }

  async function handle(request: Request): Promise<Response> {
    const headers = request.headers;
    const target = parseTargetUrl(headers.get("t-proxy-url"));
    const requestId = headers.get("t-request-id")?.trim() ?? "";
    if (!UUID.test(requestId)) throw new AppError("invalid_request_id", "T-REQUEST-ID must be a UUID");
    const patterns = parseRedactions(headers.get("t-redacted") ?? undefined);
    const proveFailed = parseProveFailed(headers.get("t-prove-failed-req"));
    const needed = requestedSizes(headers, deps.sessions.sizes, deps.sessions.limits);
    const method = request.method.toUpperCase();
    if (!ENGINE_METHODS.has(method)) {
      throw new AppError("unsupported_method", `method ${method} cannot be proven; use GET, POST, PUT or DELETE`);
    }
    const body = await readJsonBody(request, deps.maxBodyBytes);
    const run = startRun(deps);
    if (!deps.hub.claim(requestId)) {
      run.end();
      throw new AppError("duplicate_request_id", "T-REQUEST-ID was used before");
    }
    const reqLog = log.child({ requestId });

    let session: ProverSession | undefined;
    let proving = false;
    try {
      const resolved = await resolveTarget(target, deps.policy);
      session = run.session = await within(run, deps.sessions.acquire(resolved.serverName, needed), (late) => {
        closeProverSession(late);
        void deps.notary.release(late.notarySessionId);
      });
      const tcp = (run.tcp = deps.bridge.openTcp({
        hostname: resolved.address,
        port: resolved.port,
        connectTimeoutMs: deps.connectTimeoutMs,
        responseTimeoutMs: deps.responseTimeoutMs,
      }));
      const host = resolved.port === 443 ? resolved.serverName : `${resolved.serverName}:${resolved.port}`;
      // Abandoned mid-exchange, the session is closed by sendRequest's own failure path or else right here.
      const exchange = await within(
        run,
        sendRequest(session, tcp, {
          method: method as Method,
          pathAndQuery: resolved.pathAndQuery,
          headers: forwardedHeaders(request, host, deps.authorizationIsOurs),
          body,
        }),
        () => closeProverSession(session!),
      );
      const status = exchange.response.status;
      reqLog.info("target answered", { status, sent: exchange.sent.length, recv: exchange.recv.length });

      const responseHeaders = new Headers();
      for (const [name, value] of exchange.response.headers) {
        if (!DROPPED_RESPONSE_HEADERS.has(name.toLowerCase())) {
          responseHeaders.append(name, new TextDecoder().decode(Uint8Array.from(value)));
        }
      }
      const willProve = status < 400 || proveFailed;
      if (willProve) {
        responseHeaders.set("t-proof-id", requestId);
        const redaction = computeRedactions({ sent: exchange.sent, recv: exchange.recv }, patterns);
        proving = true;
        void prove(session, run, requestId, exchange, redaction);
      } else {
        closeProverSession(session);
        void deps.notary.release(session.notarySessionId);
        deps.hub.settle(requestId, {
          event: "error",
          requestId,
          code: "target_request_failed",
          message: `the target answered ${status}; no proof is made without T-PROVE-FAILED-REQ: true`,
        });
      }
      return new Response(bodyBytes(exchange.recv), { status, headers: responseHeaders });
    } catch (error) {
      // An engine call still running on an abandoned session must not have it freed underneath; `within` closes it later.
      if (session && !session.closed && !run.failure) closeProverSession(session);
      if (session) void deps.notary.release(session.notarySessionId);
      const failure = run.failure ?? toAppError(error, "session_failed");
      reqLog.warn("proxy request failed", { code: failure.code, error: failure.message });
      deps.hub.settle(requestId, { event: "error", requestId, code: failure.code, message: failure.message });
      throw failure;
    } finally {
      if (!proving) run.end();
    }
  }

  return new Elysia({ name: "proxy" }).all("/proxy", ({ request }) => handle(request), { parse: "none" });
}
