import { Elysia } from "elysia";
import { GIT_COMMIT, GIT_COMMIT_TIME } from "../../version.ts";
import type { NotaryPool } from "./notary-pool.ts";

/**
 * `GET /notaryinfo`, the shape Verity's prover answers and its client reads: the notary's version and SPKI
 * PEM public key, and the commit this prover was built from (empty strings when run from source); plus the
 * notary's Ethereum address, which its EVM attestations recover to (null for a secp256r1 notary). With
 * several notaries these name the primary one (the first listed that answers) and `notaries` lists them all.
 */
export function notaryInfoRoutes(notary: Pick<NotaryPool, "info" | "statuses">) {
  return new Elysia({ name: "notary-info" }).get("/notaryinfo", async () => {
    const info = await notary.info();
    return {
      version: info.version,
      publicKey: info.publicKey,
      ethereumAddress: info.ethereumAddress,
      gitCommitHash: GIT_COMMIT ?? "",
      gitCommitTimestamp: GIT_COMMIT_TIME ?? "",
      notaries: notary.statuses(),
    };
  });
}
