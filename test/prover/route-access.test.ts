import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import * as v from "valibot";
import type { ErrorShape } from "../../src/core/http.ts";
import { type RouteAccess, type RouteMethod, alwaysNeedsKey, bindRoute, declareRoute, pathParameters, routeGroup } from "../../src/http/route.ts";
import { RouteAccessTable } from "../../src/prover/route-access.ts";

/** A group of routes declared with `access`, answering nothing of interest. */
function group(access: RouteAccess, routes: [RouteMethod, string][], errors: ErrorShape = "coded") {
  const declared = routes.map(([method, path]) => {
    const params = { schema: v.object(Object.fromEntries(pathParameters(path).map((name) => [name, v.string()]))), code: "invalid_query" } as const;
    const declaration = declareRoute({ method, path, operationId: path, summary: path, access, params, responses: { 200: { description: "" } } });
    return bindRoute(declaration, () => new Response(""));
  });
  return routeGroup(`test ${routes[0]![1]}`, declared, errors);
}

/** The access table the prover mounts its route groups through: what a request path falls under. */
function table(): RouteAccessTable {
  const app = new Elysia();
  const access = new RouteAccessTable();
  access.mount(app, group("key", [["GET", "/pool"], ["DELETE", "/pool/:host"]]));
  access.mount(app, group("key-or-scoped", [["GET", "/proof/:requestId"]]));
  access.mount(app, group("store", [["GET", "/stores/:id/data/partitions/:partition/:queryType"]], "log-store"));
  access.mount(app, group("open", [["GET", "/pool-status"]]));
  return access;
}

describe("RouteAccessTable", () => {
  test("a path's error shape is its group's, found as its access is; coded outside every group", () => {
    const access = table();
    expect(access.errorShapeOf("/stores/proofs/data/partitions/0/last")).toBe("log-store");
    // A store path no route answers still answers in the store's shape, as the reference does.
    expect(access.errorShapeOf("/stores/x")).toBe("log-store");
    expect(access.errorShapeOf("/stores")).toBe("coded");
    expect(access.errorShapeOf("/pool/a/b")).toBe("coded");
    expect(access.errorShapeOf("/no-such-route")).toBe("coded");
  });

  test("a path takes the access of the route it names, a parameter's place matching any value", () => {
    const access = table();
    expect(access.accessOf("/pool")).toBe("key");
    expect(access.accessOf("/pool/example.com")).toBe("key");
    expect(access.accessOf("/proof/7d0c2c4e-5b7e-4b0e-9f3a-2a8f2d1c0b9e")).toBe("key-or-scoped");
    expect(access.accessOf("/stores/proofs/data/partitions/0/last")).toBe("store");
    expect(access.accessOf("/pool-status")).toBe("open");
  });

  test("a path no route answers falls under the group whose territory it is in, else it is open", () => {
    const access = table();
    // Refused behind the key like the routes beside it, not revealed as missing.
    expect(access.accessOf("/proof/")).toBe("key-or-scoped");
    expect(access.accessOf("/pool/a/b")).toBe("key");
    expect(access.accessOf("/stores/x")).toBe("store");
    expect(access.accessOf("/pools-of-nothing")).toBe("open");
    expect(access.accessOf("/")).toBe("open");
  });

  test("routes are described with the access they declare; one mounted some other way with none", () => {
    const access = table();
    const [pool, elsewhere] = access.describe([{ method: "DELETE", path: "/pool/:host" }, { method: "GET", path: "/elsewhere" }]);
    expect(pool).toMatchObject({ method: "DELETE", path: "/pool/:host", access: "key", errorShape: "coded", declaration: { operationId: "/pool/:host" } });
    expect(elsewhere).toEqual({ method: "GET", path: "/elsewhere" });
  });

  test("the store needs a key to publish; its reads depend on the stream, so they are not always keyed", () => {
    expect(alwaysNeedsKey("store", "POST")).toBe(true);
    expect(alwaysNeedsKey("store", "GET")).toBe(false);
    expect(alwaysNeedsKey("key-or-scoped", "ALL")).toBe(true);
    expect(alwaysNeedsKey("open", "POST")).toBe(false);
    expect(alwaysNeedsKey(undefined, "GET")).toBe(false);
  });
});
