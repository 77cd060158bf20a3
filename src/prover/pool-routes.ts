import { Elysia } from "elysia";
import { engineMemoryBytes } from "../engine/wasm.ts";
import type { WarmPool } from "./pool.ts";

/**
 * `GET /pool`: the warm pool's state (ready, in use and warming sessions, per host), with the embedded
 * notary's open session count (null with a remote notary) and this process's memory.
 */
export function poolRoutes(pool: WarmPool, notarySessions: () => number | null) {
  return new Elysia({ name: "pool" }).get("/pool", () => ({
    ...pool.status(),
    notarySessions: notarySessions(),
    memory: { rssBytes: process.memoryUsage.rss(), engineBytes: engineMemoryBytes() },
  }));
}
