/**
 * Who may call each route, and the body shape of its errors: each route declares its access (src/http/route.ts),
 * each group its error shape, and the prover mounts its groups here (src/app/prover.ts). The API key check
 * (auth.ts, on the route the router matched), the error hook (src/http/error-handling.ts) and the OpenAPI document read
 * this table; no other list of guarded paths or store paths exists.
 */
import type { AnyElysia } from "elysia";
import type { ErrorShape } from "../http/error-handling.ts";
import { DeclaredRoutes } from "../http/route-guard.ts";
import { type DescribedRoute, type RouteGroup, describeRoutes, groupRoutes } from "../http/route.ts";

/**
 * A route family's territory for its error shape: its path up to its first parameter. A request path in it is
 * answered in the family's shape even when no route answers it (the store's reference answers so).
 */
interface Territory {
  /** The static part of the route's path. */
  stem: string;
  /** True: the path has parameters, and any path that starts with the stem is in the territory. */
  prefix: boolean;
  errors: ErrorShape;
}

function territoryOf(path: string, errors: ErrorShape): Territory {
  const parameter = path.indexOf(":");
  return parameter === -1 ? { stem: path, prefix: false, errors } : { stem: path.slice(0, parameter), prefix: true, errors };
}

/** The route groups of an app, each mounted with its access. */
export class RouteAccessTable {
  private readonly territories: Territory[] = [];
  /** What the API key check judges a matched route by. */
  readonly routes = new DeclaredRoutes();

  /** Mounts a group on `app`: each route under the access it declares, its errors in the group's shape. */
  mount(app: AnyElysia, group: RouteGroup): void {
    app.use(group);
    const routes = groupRoutes(group);
    this.routes.add(routes);
    for (const route of routes) this.territories.push(territoryOf(route.path, route.errorShape ?? "coded"));
  }

  /** The error body shape of a request path's route family: the exact route, else the longest territory it is in; `coded` outside any. */
  errorShapeOf(pathname: string): ErrorShape {
    let best: Territory | undefined;
    for (const territory of this.territories) {
      const inside = territory.prefix ? pathname.startsWith(territory.stem) : pathname === territory.stem;
      if (inside && (!best || territory.stem.length > best.stem.length || (!territory.prefix && best.prefix))) best = territory;
    }
    return best?.errors ?? "coded";
  }

  /** These routes with what was declared of each (nothing for a route mounted some other way). */
  describe(routes: readonly { method: string; path: string }[]): DescribedRoute[] {
    return describeRoutes(routes, this.routes.all());
  }
}
