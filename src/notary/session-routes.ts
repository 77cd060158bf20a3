/** The notary's MPC session routes (src/protocol/notary.ts lists them); the MPC WebSocket is in sockets.ts. */
import * as v from "valibot";
import { AppError, type ErrorCode } from "../errors.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import { proofSchema } from "../proof/proof-schema.ts";
import { AttestationRequest, SessionCreated, SessionRequest, SessionRunning } from "../protocol/notary.ts";
import { BODY_REFUSALS } from "./admission.ts";
import { type AttestationDeps, attest } from "./attestation.ts";
import { mpcTranscript } from "./mpc-transcript.ts";
import type { SessionRegistry } from "./sessions.ts";

/** A session's id in its path, the capability to use it: the prover that opened the session alone knows it. */
export const sessionIdParam = {
  schema: v.object({ id: v.pipe(v.string(), v.description("the session id, as its creation answered")) }),
  code: "not_found",
} as const;

/** The answer to a session's creation. */
export const sessionCreated = { 200: { description: "the session's id", content: { "application/json": SessionCreated } } } as const;

/** Ending a session the prover makes no proof of; unknown ids are ignored. */
export const releaseRoute = (path: string, operationId: string) =>
  declareRoute({
    method: "DELETE",
    path,
    operationId,
    summary: "end the session now (no proof will be asked); an unknown id is ignored",
    access: "key",
    params: sessionIdParam,
    responses: { 204: { description: "ended" } },
  });

/** What any attestation may be refused with beside its body: its session's state and the exchange's checks. */
const ATTESTATION_REFUSALS = [
  ...BODY_REFUSALS,
  "session_taken",
  "session_failed",
  "alpn_refused",
  "answer_incomplete",
  "answer_not_single",
  "answer_encoded",
  "answer_malformed",
] as const satisfies readonly ErrorCode[];

/** A session's one attestation: the prover's declared redactions in, the signed proof out. */
export const attestationRoute = <S extends v.GenericSchema>(path: string, operationId: string, body: S, where: string, errors: readonly ErrorCode[] = []) =>
  declareRoute({
    method: "POST",
    path,
    operationId,
    summary: "verify the session's exchange and sign its proof (once per session)",
    access: "key",
    params: sessionIdParam,
    body: { schema: body, code: "invalid_body", wording: { where } },
    responses: { 200: { description: "the signed proof", content: { "application/json": proofSchema } } },
    errors: [...ATTESTATION_REFUSALS, ...errors],
  });

export const createSessionRoute = declareRoute({
  method: "POST",
  path: "/session",
  operationId: "createSession",
  summary: "open an MPC session; its prover then connects the MPC WebSocket (GET /notarize?sessionId=)",
  access: "key",
  body: { schema: SessionRequest, code: "invalid_body", wording: { where: "session request" } },
  responses: sessionCreated,
  errors: [...BODY_REFUSALS, "session_too_large", "over_capacity", "shutting_down"],
});

export const sessionStateRoute = declareRoute({
  method: "GET",
  path: "/session/:id",
  operationId: "sessionState",
  summary: "a running session and its socket's traffic, so that a prover can check a warm session before using it",
  access: "key",
  params: sessionIdParam,
  responses: { 200: { description: "the session runs", content: { "application/json": SessionRunning } } },
});

const releaseSessionRoute = releaseRoute("/session/:id", "releaseSession");
const mpcAttestationRoute = attestationRoute("/session/:id/attestation", "attestSession", AttestationRequest, "attestation request");

export interface SessionRouteDeps extends AttestationDeps {
  sessions: SessionRegistry;
}

export function sessionRoutes(deps: SessionRouteDeps): RouteGroup {
  const { sessions, metrics, log } = deps;
  return routeGroup("notary-sessions", [
    bindRoute(createSessionRoute, async ({ body }) => {
      const sizes = await body();
      const sessionId = sessions.create(sizes);
      metrics.sessionCreated();
      log.info("session created", { sessionId, maxSentData: sizes.maxSentData, maxRecvData: sizes.maxRecvData });
      return { sessionId };
    }),
    bindRoute(sessionStateRoute, ({ params: { id } }) => {
      const traffic = sessions.traffic(id);
      if (!traffic) throw new AppError("not_found", "unknown or finished session");
      return { sessionId: id, state: "running" as const, traffic };
    }),
    bindRoute(releaseSessionRoute, ({ params: { id } }) => {
      sessions.release(id);
      return new Response(null, { status: 204 });
    }),
    bindRoute(mpcAttestationRoute, ({ params: { id }, body }) => attest(deps, id, body, async () => mpcTranscript(await sessions.takeVerified(id)))),
  ]);
}
