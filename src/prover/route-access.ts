/**
 * Who may call each route, and the body shape of its errors: each route declares its access (src/http/route.ts),
 * each group its error shape, and the prover mounts its groups here (src/app/prover.ts). The API key check
 * (auth.ts), the error hook (src/core/http.ts) and the OpenAPI document read this table; no other list of guarded
 * paths or store paths exists.
 */
import type { AnyElysia } from "elysia";
import type { ErrorShape } from "../core/http.ts";
import { type DescribedRoute, type RouteAccess, type RouteGroup, describeRoutes, groupRoutes } from "../http/route.ts";

/**
 * A route's territory: its path up to its first parameter. A request path in it falls under the route's access
 * even when no route answers it, so that a wrong path behind a key is refused before it is looked up.
 */
interface Territory {
  /** The static part of the route's path. */
  stem: string;
  /** True: the path has parameters, and any path that starts with the stem is in the territory. */
  prefix: boolean;
  access: RouteAccess;
  errors: ErrorShape;
}

function territoryOf(path: string, access: RouteAccess, errors: ErrorShape): Territory {
  const parameter = path.indexOf(":");
  return parameter === -1 ? { stem: path, prefix: false, access, errors } : { stem: path.slice(0, parameter), prefix: true, access, errors };
}

/** The route groups of an app, each mounted with its access. */
export class RouteAccessTable {
  private readonly territories: Territory[] = [];
  private readonly known: DescribedRoute[] = [];

  /** Mounts a group on `app`: each route under the access it declares, its errors in the group's shape. */
  mount(app: AnyElysia, group: RouteGroup): void {
    app.use(group);
    for (const route of groupRoutes(group)) this.add(route);
  }

  private add(route: DescribedRoute): void {
    this.territories.push(territoryOf(route.path, route.access ?? "open", route.errorShape ?? "coded"));
    this.known.push(route);
  }

  /** The access a request path falls under: the exact route, else the longest territory it is in; open otherwise. */
  accessOf(pathname: string): RouteAccess {
    return this.territoryOf(pathname)?.access ?? "open";
  }

  /** The error body shape of a request path's route family, found as its access is; `coded` outside any. */
  errorShapeOf(pathname: string): ErrorShape {
    return this.territoryOf(pathname)?.errors ?? "coded";
  }

  private territoryOf(pathname: string): Territory | undefined {
    let best: Territory | undefined;
    for (const territory of this.territories) {
      const inside = territory.prefix ? pathname.startsWith(territory.stem) : pathname === territory.stem;
      if (inside && (!best || territory.stem.length > best.stem.length || (!territory.prefix && best.prefix))) best = territory;
    }
    return best;
  }

  /** These routes with what was declared of each (nothing for a route mounted some other way). */
  describe(routes: readonly { method: string; path: string }[]): DescribedRoute[] {
    return describeRoutes(routes, this.known);
  }
}
