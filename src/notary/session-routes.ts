/**
 * The notary's session routes, declared once over the modes it offers (src/protocol/notary.ts lists them): each
 * mode's routes are the same declarations under its paths, with its own request schemas (src/notary/modes.ts),
 * and one handler each. A built-in mode this notary does not offer answers its session request with the refusal
 * naming the setting that offers it. The sockets are in sockets.ts.
 */
import * as v from "valibot";
import { AppError, type ErrorCode } from "../core/errors.ts";
import { type BoundRoute, type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import { BUILT_IN_MODES } from "../proof/modes.ts";
import { proofSchema } from "../proof/proof-schema.ts";
import { SessionCreated, SessionRunning, modeRoutes, modeUnavailable } from "../protocol/notary.ts";
import { BODY_REFUSALS } from "./admission.ts";
import { type AttestationDeps, attest } from "./attestation.ts";
import type { ModeRequest, NotaryMode, NotaryModes } from "./modes.ts";

/** A session's id in its path, the capability to use it: the prover that opened the session alone knows it. */
const sessionIdParam = {
  schema: v.object({ id: v.pipe(v.string(), v.description("the session id, as its creation answered")) }),
  code: "not_found",
} as const;

/** What any attestation may be refused with beside its body and its mode's checks: its session's state and the exchange's. */
const ATTESTATION_REFUSALS = [
  "session_taken",
  "session_failed",
  "alpn_refused",
  "answer_incomplete",
  "answer_not_single",
  "answer_encoded",
  "answer_malformed",
  "request_unproven",
  "invalid_claim",
  "claim_unsupported",
] as const satisfies readonly ErrorCode[];

/** The body of a mode's request as a declaration reads it: refused as invalid_body, named as the mode names it. */
const bodyOf = <T>(request: ModeRequest<T>) => ({ schema: request.schema, code: "invalid_body" as const, wording: { where: request.where } });

/** A mode's operations in the document: MPC's as they always were (createSession), another's with its name (createProxySession). */
const operationNoun = (mode: string): string =>
  mode === "mpc" ? "Session" : `${mode.replace(/(^|-)([a-z0-9])/g, (_, _dash: string, letter: string) => letter.toUpperCase())}Session`;

/** A mode's session routes: its declarations under its paths, each bound to the one handler every mode shares. */
function modeSessionRoutes(mode: NotaryMode, deps: AttestationDeps): BoundRoute[] {
  const name = mode.facts.name;
  const { session } = modeRoutes(name);
  const noun = operationNoun(name);
  const create = declareRoute({
    method: "POST",
    path: session,
    operationId: `create${noun}`,
    summary: mode.opens,
    access: "key",
    body: bodyOf(mode.sessionRequest),
    responses: { 200: { description: "the session's id", content: { "application/json": SessionCreated } } },
    errors: [...BODY_REFUSALS, "shutting_down", ...mode.sessionRequest.errors],
  });
  const release = declareRoute({
    method: "DELETE",
    path: `${session}/:id`,
    operationId: `release${noun}`,
    summary: "end the session now (no proof will be asked); an unknown id is ignored",
    access: "key",
    params: sessionIdParam,
    responses: { 204: { description: "ended" } },
  });
  const attestation = declareRoute({
    method: "POST",
    path: `${session}/:id/attestation`,
    operationId: `attest${noun}`,
    summary: "verify the session's exchange and sign its proof (once per session)",
    access: "key",
    params: sessionIdParam,
    body: bodyOf(mode.attestationRequest),
    responses: { 200: { description: "the signed proof", content: { "application/json": proofSchema } } },
    errors: [...BODY_REFUSALS, ...ATTESTATION_REFUSALS, ...mode.attestationRequest.errors],
  });
  const routes = [
    bindRoute(create, async ({ body }) => {
      const { sessionId, logFields } = await mode.open(await body());
      deps.metrics.sessionCreated();
      deps.log.info("session created", { sessionId, mode: name, ...logFields });
      return { sessionId };
    }),
    // The session id is the capability: only the prover that opened it knows it.
    bindRoute(release, ({ params: { id } }) => {
      mode.release(id);
      return new Response(null, { status: 204 });
    }),
    // The body is read inside the one attestation path, so that its refusals are counted like the others.
    bindRoute(attestation, ({ params: { id }, body }) => attest(deps, mode, id, body)),
  ];
  return mode.running ? [...routes, runningSessionRoute(mode, session, noun)] : routes;
}

/** A running session and its socket's traffic, for a mode that tells (MPC: a prover checks a warm session before using it). */
function runningSessionRoute(mode: NotaryMode, session: string, noun: string): BoundRoute {
  const state = declareRoute({
    method: "GET",
    path: `${session}/:id`,
    operationId: `${noun[0]!.toLowerCase()}${noun.slice(1)}State`,
    summary: "a running session and its socket's traffic, so that a prover can check a warm session before using it",
    access: "key",
    params: sessionIdParam,
    responses: { 200: { description: "the session runs", content: { "application/json": SessionRunning } } },
  });
  return bindRoute(state, ({ params: { id } }) => {
    const traffic = mode.running?.(id);
    if (!traffic) throw new AppError("not_found", "unknown or finished session");
    return { sessionId: id, state: "running" as const, traffic };
  });
}

/** A built-in mode this notary does not offer: its session request is refused with why, so that a prover learns it. */
function unofferedModeRoute(name: string): BoundRoute {
  const refusal = () => modeUnavailable(name, "this notary does not");
  const create = declareRoute({
    method: "POST",
    path: modeRoutes(name).session,
    operationId: `create${operationNoun(name)}`,
    summary: `open a ${name}-mode session: this notary does not offer the mode, and answers why`,
    access: "key",
    responses: {},
    errors: [...BODY_REFUSALS, refusal().code],
  });
  return bindRoute(create, () => {
    throw refusal();
  });
}

export function sessionRoutes(modes: NotaryModes, deps: AttestationDeps): RouteGroup {
  const unoffered = Object.keys(BUILT_IN_MODES).filter((builtIn) => !modes.get(builtIn));
  return routeGroup("notary-sessions", [...modes.all().flatMap((mode) => modeSessionRoutes(mode, deps)), ...unoffered.map(unofferedModeRoute)]);
}
