/**
 * Who may call each route group, and the body shape of its errors, declared where the group is mounted
 * (src/app/prover.ts). The API key check (auth.ts), the error hook (src/http.ts) and the OpenAPI document's
 * `security` read these declarations; no other list of guarded paths or store paths exists.
 */
import type { AnyElysia } from "elysia";
import type { ErrorShape } from "../http.ts";

export type RouteAccess =
  /** Anyone. */
  | "open"
  /** A full API key (PROVER_API_KEYS). */
  | "key"
  /** A full key, or a scoped one (PROVER_API_KEYS_SCOPED), which reads only its own requests' proofs. */
  | "key-or-scoped"
  /** The message store: publishing needs a full key; reading the proofs stream too, unless PROVER_PUBLIC_PROOFS=1. */
  | "store";

/** A route as Elysia lists it, with the access of the group it was mounted in (none: not declared). */
export interface DeclaredRoute {
  method: string;
  path: string;
  access?: RouteAccess;
}

/** True when every call of this method under `access` needs an API key (the store's reads depend on the stream). */
export const alwaysNeedsKey = (access: RouteAccess | undefined, method: string): boolean =>
  access === "key" || access === "key-or-scoped" || (access === "store" && method.toUpperCase() === "POST");

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
  private readonly declared = new Map<string, RouteAccess>();

  /** Mounts `group` on `app`, declaring that every route it holds is called with `access` and answers errors in `errors`. */
  mount(app: AnyElysia, group: AnyElysia, access: RouteAccess, errors: ErrorShape = "coded"): void {
    app.use(group);
    for (const { method, path } of group.routes) {
      this.territories.push(territoryOf(path, access, errors));
      this.declared.set(`${method} ${path}`, access);
    }
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

  /** These routes with the access each was declared with. */
  describe(routes: readonly { method: string; path: string }[]): DeclaredRoute[] {
    return routes.map(({ method, path }) => ({ method, path, access: this.declared.get(`${method} ${path}`) }));
  }
}
