/** The prover's status routes: `GET /healthcheck` and `GET /info`. */
import * as v from "valibot";
import { SessionSizes } from "../core/session-sizes.ts";
import { healthcheck } from "../http/health.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../http/route.ts";
import { NotaryInfo } from "../protocol/notary.ts";
import type { NotaryPool } from "../prover/notary/notary-pool.ts";
import { NotaryStatuses } from "../prover/notary/routes.ts";
import { VERSION } from "../base/version.ts";

export const proverInfoRoute = declareRoute({
  method: "GET",
  path: "/info",
  operationId: "info",
  summary: "version, node address, notary, session sizes, test trust anchor",
  access: "open",
  responses: {
    200: {
      description: "about this prover",
      content: {
        "application/json": v.object({
          version: v.string(),
          nodeAddress: v.string(),
          notary: v.nullable(v.object({ embedded: v.boolean(), ...NotaryInfo.entries })),
          notaries: NotaryStatuses,
          sessionSizes: SessionSizes,
          testTrustAnchor: v.boolean(),
        }),
      },
    },
  },
});

export interface ProverStatus {
  notary: Pick<NotaryPool, "info" | "statuses">;
  /** The address the store's messages are signed with. */
  nodeAddress: string;
  embeddedNotary: boolean;
  sessionSizes: SessionSizes;
  testTrustAnchor: boolean;
}

export function statusRoutes(status: ProverStatus): RouteGroup {
  const info = bindRoute(proverInfoRoute, async () => {
    const notaryInfo = await status.notary.info().catch(() => null);
    return {
      version: VERSION,
      nodeAddress: status.nodeAddress,
      // Where the notary runs is the operator's business: /info only says whether it is embedded.
      notary: notaryInfo && { embedded: status.embeddedNotary, ...notaryInfo },
      // Every notary this prover uses, in configuration order: clients pin all of these keys.
      notaries: status.notary.statuses(),
      sessionSizes: status.sessionSizes,
      testTrustAnchor: status.testTrustAnchor,
    };
  });
  return routeGroup("status", [healthcheck, info]);
}
