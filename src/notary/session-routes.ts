/**
 * The notary's session routes, declared once over the modes it offers (src/protocol/notary.ts lists them): each
 * handler is written once and finds its mode by the path it was declared under. A built-in mode this notary does
 * not offer answers its session request with the refusal naming the setting that offers it. The sockets are in
 * sockets.ts.
 */
import { Elysia } from "elysia";
import { AppError } from "../errors.ts";
import { BUILT_IN_MODES } from "../proof/modes.ts";
import { type SessionCreated, type SessionRunning, modeRoutes, modeUnavailable } from "../protocol/notary.ts";
import { type AttestationDeps, attest } from "./attestation.ts";
import type { NotaryMode, NotaryModes } from "./modes.ts";

async function openSession(mode: NotaryMode, body: unknown, deps: AttestationDeps): Promise<SessionCreated> {
  const { sessionId, logFields } = await mode.open(body);
  deps.metrics.sessionCreated();
  deps.log.info("session created", { sessionId, mode: mode.facts.name, ...logFields });
  return { sessionId };
}

function runningSession(mode: NotaryMode, sessionId: string): SessionRunning {
  const traffic = mode.running?.(sessionId);
  if (!traffic) throw new AppError("not_found", "unknown or finished session");
  return { sessionId, state: "running", traffic };
}

export function sessionRoutes(modes: NotaryModes, deps: AttestationDeps) {
  const app = new Elysia({ name: "notary-sessions" });
  for (const mode of modes.all()) {
    const { session } = modeRoutes(mode.facts.name);
    app
      .post(session, ({ body }) => openSession(mode, body, deps))
      .get(`${session}/:id`, ({ params }) => runningSession(mode, params.id))
      .delete(`${session}/:id`, ({ params }) => {
        // The session id is the capability: only the prover that opened it knows it.
        mode.release(params.id);
        return new Response(null, { status: 204 });
      })
      .post(`${session}/:id/attestation`, ({ body, params }) => attest(deps, mode, params.id, body));
  }
  for (const name of Object.keys(BUILT_IN_MODES).filter((builtIn) => !modes.get(builtIn))) {
    app.post(modeRoutes(name).session, () => {
      throw modeUnavailable(name, "this notary does not");
    });
  }
  return app;
}
