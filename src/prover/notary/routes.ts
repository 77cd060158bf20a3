import * as v from "valibot";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../../http/route.ts";
import { NotaryInfo } from "../../protocol/notary.ts";
import { GIT_COMMIT, GIT_COMMIT_TIME } from "../../base/version.ts";
import type { NotaryPool, NotaryStatus } from "./notary-pool.ts";

/** Every notary a prover uses, in configuration order, as `/notaryinfo` and `/info` list them. */
export const NotaryStatuses = v.array(
  v.object({
    publicKey: v.pipe(v.nullable(v.string()), v.description("SPKI PEM; null until the notary answered once")),
    signatureAlgorithm: v.nullable(NotaryInfo.entries.signatureAlgorithm),
    ethereumAddress: v.nullable(v.string()),
    healthy: v.boolean(),
  }),
) satisfies v.GenericSchema<unknown, NotaryStatus[]>;

/**
 * `GET /notaryinfo`, the shape Verity's prover answers and its client reads: the notary's version and SPKI
 * PEM public key, and the commit this prover was built from (empty strings when run from source); plus the
 * notary's Ethereum address, which its EVM attestations recover to (null for a secp256r1 notary). With
 * several notaries these name the primary one (the first listed that answers) and `notaries` lists them all.
 */
export const notaryInfoRoute = declareRoute({
  method: "GET",
  path: "/notaryinfo",
  operationId: "notaryInfo",
  summary: "the notary's version and public key, as Verity's prover answers it",
  access: "open",
  responses: {
    200: {
      description: "the notary",
      content: {
        "application/json": v.object({
          version: v.string(),
          publicKey: v.pipe(v.string(), v.description("SPKI PEM")),
          ethereumAddress: v.nullable(v.string()),
          gitCommitHash: v.string(),
          gitCommitTimestamp: v.string(),
          notaries: NotaryStatuses,
        }),
      },
    },
  },
  errors: ["notary_unavailable"],
});

export function notaryInfoRoutes(notary: Pick<NotaryPool, "info" | "statuses">): RouteGroup {
  const info = bindRoute(notaryInfoRoute, async () => {
    const primary = await notary.info();
    return {
      version: primary.version,
      publicKey: primary.publicKey,
      ethereumAddress: primary.ethereumAddress,
      gitCommitHash: GIT_COMMIT ?? "",
      gitCommitTimestamp: GIT_COMMIT_TIME ?? "",
      notaries: notary.statuses(),
    };
  });
  return routeGroup("notary-info", [info]);
}
