/**
 * Who may call a route, decided on the route the router matched, never on the raw path: Elysia serves `/x/` (and
 * `/x/.`, which the URL parser makes `/x/`) with the route `/x`, and `/proof/a%2Fb` with the parameter `a/b`, so a
 * check of the path a request names misses what the route then does. A path no route answers is judged as a route
 * of unknown access (the decision's to refuse, fail closed), so that a variant the router serves differently
 * tomorrow cannot open a door today. Both the prover and the notary guard their routes here.
 */
import { Elysia } from "elysia";
import type { DescribedRoute } from "./route.ts";

/** The refusal of a call, or undefined when it may go on. `route` is undefined for a path no declared route answers. */
export type RouteRefusal = (request: Request, route: DescribedRoute | undefined, params: Readonly<Record<string, string | undefined>>) => Response | undefined;

/** Declared routes by their path (Elysia's form, `/proof/:requestId`), the key the router reports a match by. */
export class DeclaredRoutes {
  private readonly byPath = new Map<string, DescribedRoute>();
  private readonly list: DescribedRoute[] = [];

  /** Adds routes; one path declared twice must declare one access, since access is looked up by path. */
  add(routes: readonly DescribedRoute[]): void {
    for (const route of routes) {
      const known = this.byPath.get(route.path);
      if (known && known.access !== route.access) throw new Error(`${route.path}: declared with access ${known.access} and ${route.access}`);
      this.byPath.set(route.path, route);
      this.list.push(route);
    }
  }

  all(): readonly DescribedRoute[] {
    return this.list;
  }

  at(path: string | undefined): DescribedRoute | undefined {
    return path === undefined ? undefined : this.byPath.get(path);
  }
}

/**
 * Elysia plugin, used before the routes and before the error handler: every matched route's call passes `refuse`
 * with its declaration, and a path no route answers passes it with none before it is answered "not found".
 */
export function routeGuard(routes: DeclaredRoutes, refuse: RouteRefusal) {
  return new Elysia({ name: "route-guard" })
    .onBeforeHandle({ as: "global" }, ({ request, route, params }) => refuse(request, routes.at(route), (params ?? {}) as Record<string, string | undefined>))
    .onError({ as: "global" }, ({ code, request }) => (code === "NOT_FOUND" ? refuse(request, undefined, {}) : undefined));
}
