import * as v from "valibot";
import type { EngineHosts } from "../../../engine/host/engine-hosts.ts";
import { enginesText } from "../../../engine/host/placement.ts";
import { AppError } from "../../../core/errors.ts";
import { tlsServerNameSchema } from "../../../core/schema.ts";
import { type RouteGroup, bindRoute, declareRoute, routeGroup } from "../../../http/route.ts";
import type { EndpointSizes } from "./endpoint-sizes.ts";
import { maxPoolSize } from "./pool-policy.ts";
import type { WarmPool } from "./pool.ts";
import { withinLimits } from "../../exchange/requested-sizes.ts";
import { ProxyHeaders } from "../../call/headers.ts";
import { className, endpointKey, planSession } from "./size-classes.ts";
import { type TargetPolicy, resolveTarget } from "../../../core/target-policy.ts";
import { type Target, hostOf } from "../../../core/target.ts";
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

const sessionClass = v.pipe(v.string(), v.description("a size class as sent/recv bytes (one of /pool's classes)"), v.trim(), v.regex(/^\d+\/\d+$/, "must name a class as sent/recv bytes"));

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
/** What the pool keeps warm for one (host, class). */
const poolEntry = v.object({ host: v.string(), class: v.string(), learned: v.boolean(), pinned: v.boolean(), share: count, ready: count, warming: count });

export const poolRoute = declareRoute({
  method: "GET",
  path: "/pool",
  operationId: "pool",
  summary: "the warm pool's state, the embedded notary's sessions and memory",
  access: "key",
  responses: {
    200: {
      description: "pool state (docs/api.md, Other endpoints)",
      content: { "application/json": v.looseObject({ ready: count, inUse: count, warming: count, hosts: v.array(poolEntry), notarySessions: v.nullable(count) }) },
    },
  },
});

export const poolsRoute = declareRoute({
  method: "GET",
  path: "/pools",
  operationId: "pools",
  summary: "what the warm pool keeps per (host, size class): pinned and automatic entries",
  access: "key",
  responses: { 200: { description: "the pool's entries (docs/prover.md, The warm pool)", content: { "application/json": v.object({ pools: v.array(poolEntry) }) } } },
});

/**
 * `T-PREPARE: N` (0 stops keeping any), the target's URL and an optional `T-SESSION-CLASS: sent/recv` naming one
 * of the classes, or the sizes to pick one by.
 */
export const prepareRoute = declareRoute({
  method: "GET",
  path: "/prepare",
  operationId: "prepare",
  summary: "keep N sessions warm for a host and size class (Verity's T-PREPARE shape); 0 stops",
  access: "key",
  headers: {
    schema: v.object({
      "t-prepare": v.pipe(
        v.string("T-PREPARE is required"),
        v.description("how many sessions to keep warm; 0 stops keeping them"),
        v.trim(),
        v.regex(/^\d{1,3}$/, "must be a whole number of sessions"),
        v.transform(Number),
      ),
      "t-session-class": v.optional(sessionClass),
      // The target and the sizes as /proxy reads them: its host gets the sessions; its path, or the sizes, the class.
      ...v.pick(ProxyHeaders, ["t-proxy-url", "t-max-sent-data", "t-max-recv-data"]).entries,
    }),
    code: "invalid_header",
    wording: { where: "header" },
  },
  responses: {
    200: {
      description: "what is now kept",
      content: { "application/json": v.object({ host: v.string(), class: v.string(), count }) },
    },
  },
  errors: ["session_too_large", "target_forbidden", "target_unresolvable"],
});

export const dropPoolHostRoute = declareRoute({
  method: "DELETE",
  path: "/pool/:host",
  operationId: "dropPoolHost",
  summary: "stop keeping sessions warm for a host; its ready sessions close",
  access: "key",
  params: { schema: v.object({ host: v.pipe(v.string(), v.toLowerCase(), v.regex(/^[a-z0-9.-]{1,253}$/, "must be a host name"), tlsServerNameSchema("must be a host name")) }), code: "invalid_query", wording: { where: "path" } },
  responses: {
    200: { description: "sessions closed", content: { "application/json": v.object({ host: v.string(), closed: count }) } },
  },
});

/**
 * The warm pool at run time. `GET /pool` (and `GET /pools`, its entries only): what is kept warm per
 * (host, class), with the embedded notary's sessions, this process's memory and each engine host's. `GET /prepare` (Verity's
 * shape): keep `T-PREPARE: N` sessions warm for the host of `T-PROXY-URL`, in the class `T-SESSION-CLASS`
 * names, else the one `T-MAX-*-DATA` or the endpoint's learned answer size needs, else the default class.
 * `DELETE /pool/{host}`: stop keeping sessions for a host and close its ready ones.
 */
export function poolRoutes(deps: PoolRouteDeps): RouteGroup {
  const { pool } = deps;

  async function prepare(asked: v.InferOutput<typeof prepareRoute.headers.schema>) {
    const target = asked["t-proxy-url"];
    // The same host policy as /proxy: no sessions are set up for a target /proxy would refuse.
    await resolveTarget(target, deps.policy);
    const announced = { maxSentData: asked["t-max-sent-data"], maxRecvData: asked["t-max-recv-data"] };
    const sizes = asked["t-session-class"] ? namedClass(asked["t-session-class"]) : classFor(announced, target);
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

  /** The class the sizes ask for (above the prover's limits: session_too_large), else the endpoint's learned answer size's. */
  function classFor(announced: { maxSentData?: number; maxRecvData?: number }, target: Target) {
    return planSession({
      classes: pool.classes,
      defaultClass: pool.defaultClass,
      announced: withinLimits(announced, pool.limits),
      requestBytes: 0,
      learnedRecv: deps.endpointSizes.expected(endpointKey(hostOf(target), "GET", target.pathAndQuery)),
      canRepeat: false,
    }).class;
  }

  return routeGroup("pool", [
    bindRoute(poolRoute, () => ({
      ...pool.status(),
      exchanges: deps.exchanges.status(),
      notarySessions: deps.notarySessions(),
      // This process's own memory, and all its engines' (provers and an embedded notary's Verifiers live in the hosts).
      memory: { rssBytes: process.memoryUsage.rss(), engineBytes: deps.hosts.engineBytes() },
      engineHosts: { replaced: { ...deps.hosts.replaced }, hosts: deps.hosts.status() },
    })),
    bindRoute(poolsRoute, () => ({ pools: pool.status().hosts })),
    bindRoute(prepareRoute, ({ headers }) => prepare(headers)),
    bindRoute(dropPoolHostRoute, ({ params: { host } }) => ({ host, closed: pool.drop(host) })),
  ]);
}
