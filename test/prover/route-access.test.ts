import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import * as v from "valibot";
import type { ErrorShape } from "../../src/http/error-handling.ts";
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

  test("a matched route's access is looked up by the path the router reports; a path no route declares has none", () => {
    const access = table();
    expect(access.routes.at("/pool")?.access).toBe("key");
    expect(access.routes.at("/pool/:host")?.access).toBe("key");
    expect(access.routes.at("/proof/:requestId")?.access).toBe("key-or-scoped");
    expect(access.routes.at("/stores/:id/data/partitions/:partition/:queryType")?.access).toBe("store");
    expect(access.routes.at("/pool-status")?.access).toBe("open");
    // Raw request paths are not looked up: only the router's patterns.
    expect(access.routes.at("/pool/example.com")).toBeUndefined();
    expect(access.routes.at(undefined)).toBeUndefined();
  });

  test("one path declared under two accesses is refused as it is mounted", () => {
    const access = table();
    expect(() => access.mount(new Elysia(), group("open", [["POST", "/pool"]]))).toThrow("/pool: declared with access key and open");
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
