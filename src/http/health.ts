import * as v from "valibot";
import { bindRoute, declareRoute } from "./route.ts";

/** `GET /healthcheck`, as the prover and the notary answer it: the process serves. */
export const healthcheckRoute = declareRoute({
  method: "GET",
  path: "/healthcheck",
  operationId: "healthcheck",
  summary: "liveness",
  access: "open",
  responses: { 200: { description: "Ok", content: { "text/plain": v.string() } } },
});

export const healthcheck = bindRoute(healthcheckRoute, () => new Response("Ok"));
