import { Elysia } from "elysia";
import * as v from "valibot";
import type { EngineHosts } from "../../engine/host/engine-hosts.ts";
import { enginesText } from "../../engine/host/placement.ts";
import { AppError } from "../../errors.ts";
import { parseInput } from "../../http.ts";
import type { EndpointSizes } from "./endpoint-sizes.ts";
import { maxPoolSize } from "./pool-policy.ts";
import type { WarmPool } from "./pool.ts";
import { requestedSizes } from "../exchange/requested-sizes.ts";
import { className, endpointKey, planSession } from "./size-classes.ts";
import { type TargetPolicy, resolveTarget } from "../../core/target-policy.ts";
import { parseTargetUrl } from "../../core/target.ts";
import type { TurnGate } from "./turn-gate.ts";

export interface PoolRouteDeps {
  pool: WarmPool;
  hosts: Pick<EngineHosts, "status" | "replaced" | "engines" | "engineBytes">;
  endpointSizes: EndpointSizes;
  /** Exchanges with targets running, and requests waiting for their turn (PROVER_CONCURRENT_EXCHANGES). */
  exchanges: Pick<TurnGate, "status">;
  policy: TargetPolicy;
  /** The embedded notary's open sessions; null with a remote notary. */
  notarySessions(): number | null;
}

/** `T-PREPARE: N` (0 stops keeping any) and an optional `T-SESSION-CLASS: sent/recv` naming one of the classes. */
export const PrepareHeaders = v.object({
  "t-prepare": v.pipe(v.string("T-PREPARE is required"), v.trim(), v.regex(/^\d{1,3}$/, "must be a whole number of sessions"), v.transform(Number)),
  "t-session-class": v.optional(v.pipe(v.string(), v.trim(), v.regex(/^\d+\/\d+$/, "must name a class as sent/recv bytes"))),
});
export const HostParam = v.object({ host: v.pipe(v.string(), v.toLowerCase(), v.regex(/^[a-z0-9.-]{1,253}$/, "must be a host name")) });

/**
 * The warm pool at run time. `GET /pool` (and `GET /pools`, its entries only): what is kept warm per
 * (host, class), with the embedded notary's sessions, this process's memory and each engine host's. `GET /prepare` (Verity's
 * shape): keep `T-PREPARE: N` sessions warm for the host of `T-PROXY-URL`, in the class `T-SESSION-CLASS`
 * names, else the one `T-MAX-*-DATA` or the endpoint's learned answer size needs, else the default class.
 * `DELETE /pool/{host}`: stop keeping sessions for a host and close its ready ones.
 */
export function poolRoutes(deps: PoolRouteDeps) {
  const { pool } = deps;

  async function prepare(headers: Headers) {
    const asked = parseInput(
      PrepareHeaders,
      { "t-prepare": headers.get("t-prepare") ?? undefined, "t-session-class": headers.get("t-session-class") ?? undefined },
      "invalid_header",
      "header",
    );
    const target = parseTargetUrl(headers.get("t-proxy-url"));
    // The same host policy as /proxy: no sessions are set up for a target /proxy would refuse.
    await resolveTarget(target, deps.policy);
    const sizes = asked["t-session-class"] ? namedClass(asked["t-session-class"]) : classFor(headers, target.port === 443 ? target.serverName : `${target.serverName}:${target.port}`, target.pathAndQuery);
    const ceiling = maxPoolSize(sizes, pool.limits, deps.hosts.engines);
    if (asked["t-prepare"] > ceiling) {
      throw new AppError("invalid_header", `T-PREPARE must be at most ${ceiling} for class ${className(sizes)} (${enginesText(deps.hosts.engines)})`);
    }
    pool.prepare(target.serverName, sizes, asked["t-prepare"]);
    return { host: target.serverName, class: className(sizes), count: asked["t-prepare"] };
  }

  function namedClass(name: string) {
    const found = pool.classes.find((c) => className(c) === name);
    if (!found) throw new AppError("invalid_header", `T-SESSION-CLASS must be one of ${pool.classes.map(className).join(", ")}`);
    return found;
  }

  function classFor(headers: Headers, host: string, pathAndQuery: string) {
    return planSession({
      classes: pool.classes,
      defaultClass: pool.defaultClass,
      announced: requestedSizes(headers, pool.limits),
      requestBytes: 0,
      learnedRecv: deps.endpointSizes.expected(endpointKey(host, "GET", pathAndQuery)),
      canRepeat: false,
    }).class;
  }

  return new Elysia({ name: "pool" })
    .get("/pool", () => ({
      ...pool.status(),
      exchanges: deps.exchanges.status(),
      notarySessions: deps.notarySessions(),
      // This process's own memory, and all its engines' (provers and an embedded notary's Verifiers live in the hosts).
      memory: { rssBytes: process.memoryUsage.rss(), engineBytes: deps.hosts.engineBytes() },
      engineHosts: { replaced: { ...deps.hosts.replaced }, hosts: deps.hosts.status() },
    }))
    .get("/pools", () => ({ pools: pool.status().hosts }))
    .get("/prepare", ({ request }) => prepare(request.headers))
    .delete("/pool/:host", ({ params }) => {
      const { host } = parseInput(HostParam, params, "invalid_query", "path");
      return { host, closed: pool.drop(host) };
    });
}
