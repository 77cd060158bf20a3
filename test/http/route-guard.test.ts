import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { connect } from "node:net";
import type { ProverServer } from "../../src/app/prover.ts";
import type { DescribedRoute } from "../../src/http/route.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { startProverInProcess } from "../../testkit/prover.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * Every keyed route of the composed prover and of its embedded notary, listed from the routes they declare (so a
 * route added tomorrow is covered the day it lands), asked under every spelling a router or a URL parser might
 * fold into it (a trailing slash, a dot segment, a doubled slash, percent-encoding, another case): without a key,
 * with a wrong one and with a key of another scope, each is refused 401 or 403, and nothing reaches the target or
 * the store. The requests go over a raw socket: a client's URL parser would fold `/./` before the server saw it.
 */
const FULL_KEY = "full-key-3b8e1c0d9a";
const SCOPED_KEY = "scoped-key-7f2a6b4c1e";
const WRONG_KEY = "wrong-key-5d4c3b2a19";

let target: Server<undefined>;
let targetHits = 0;
let server: ProverServer;
let targetUrl: string;

beforeAll(async () => {
  const tls = tlsFixture();
  target = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: tls.chainPem, key: tls.leafKeyPem },
    fetch: () => {
      targetHits++;
      return Response.json({ reached: true });
    },
  });
  targetUrl = `https://${TARGET_HOST}:${target.port}/data`;
  ({ server } = await startProverInProcess(target.port!, { PROVER_API_KEYS: FULL_KEY, PROVER_API_KEYS_SCOPED: SCOPED_KEY }));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  target?.stop(true);
}, 60_000);

/** A value for each path parameter: the store's stream is the proofs stream, whose reads need a key. */
const PARAMETER_VALUES: Record<string, string> = { id: "proofs", partition: "0", queryType: "last", requestId: crypto.randomUUID() };

/** A route's path with its parameters filled in. */
const concrete = (path: string): string => path.replace(/:([A-Za-z]+)/g, (_, name: string) => PARAMETER_VALUES[name] ?? "example.com");

/** The spellings of a path that a router or URL parser may fold into it, or that name no route at all. */
function spellings(path: string): string[] {
  const last = path.lastIndexOf("/");
  const variants = [path, `${path}/`, `${path}/.`, `${path}/./`, `/${path}`, `${path}//`, `/.${path}`, `/x/..${path}`, path.toUpperCase()];
  // The first letter of the last segment percent-encoded, and the last slash encoded.
  variants.push(`${path.slice(0, last + 1)}%${path.charCodeAt(last + 1).toString(16)}${path.slice(last + 2)}`);
  if (last > 0) variants.push(`${path.slice(0, last)}%2F${path.slice(last + 1)}`);
  return variants;
}

/** The methods a route is called with: its own, or each a proof can be made of for `ALL`. */
const methodsOf = (route: DescribedRoute): string[] => (route.method === "ALL" ? ["GET", "POST", "PUT", "DELETE"] : [route.method]);

/** The routes behind a key: every declared route not open (a store route here reads the proofs stream, or publishes). */
const keyedRoutes = (routes: DescribedRoute[]): DescribedRoute[] => routes.filter((route) => route.access !== undefined && route.access !== "open");

/** Sends one request as written, path and all, over a raw socket, and reads the status of the answer. */
async function rawStatus(baseUrl: string, method: string, path: string, headers: Record<string, string>): Promise<number> {
  const { hostname, port } = new URL(baseUrl);
  const body = method === "POST" || method === "PUT" ? '{"content":{"n":1}}' : "";
  const head = [`${method} ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, "Connection: close", `Content-Length: ${body.length}`, "Content-Type: application/json"];
  for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`);
  const answer = await new Promise<string>((resolve, reject) => {
    let text = "";
    const socket = connect(Number(port), hostname, () => socket.write(`${head.join("\r\n")}\r\n\r\n${body}`));
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
      // The status line is all this test reads: an SSE stream that was let through would never end.
      if (text.includes("\r\n")) socket.destroy();
    });
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
  const status = /^HTTP\/1\.1 (\d{3})/.exec(answer);
  if (!status) throw new Error(`${method} ${path}: no status line in ${JSON.stringify(answer.slice(0, 80))}`);
  return Number(status[1]);
}

/** Every keyed route under every spelling and method, with the statuses each caller got. */
async function statusesOf(baseUrl: string, routes: DescribedRoute[], callers: Record<string, Record<string, string>>) {
  const seen: { route: string; method: string; path: string; caller: string; status: number }[] = [];
  const proxyHeaders = { "T-PROXY-URL": targetUrl, "T-REQUEST-ID": crypto.randomUUID(), "T-PROOF-MODE": "proxy" };
  for (const route of keyedRoutes(routes)) {
    for (const method of methodsOf(route)) {
      for (const path of spellings(concrete(route.path))) {
        for (const [caller, headers] of Object.entries(callers)) {
          // A scoped key may call the routes declared for it: what those do with it is their own tests' subject.
          if (caller === "scoped" && route.access === "key-or-scoped") continue;
          seen.push({ route: route.path, method, path, caller, status: await rawStatus(baseUrl, method, path, { ...proxyHeaders, ...headers }) });
        }
      }
    }
  }
  return seen;
}

describe("access on every spelling of a route", () => {
  test("the prover: every keyed route, under every spelling, refuses no key (401), a wrong key and a scoped key (403)", async () => {
    const routes = server.routes();
    // The list is the declarations' own: the routes the issue named are among them.
    expect(keyedRoutes(routes).map((route) => route.path)).toEqual(expect.arrayContaining(["/proxy", "/metrics", "/pools", "/prepare", "/proof/:requestId"]));
    const seen = await statusesOf(server.url, routes, { none: {}, wrong: { authorization: `Bearer ${WRONG_KEY}` }, scoped: { authorization: `Bearer ${SCOPED_KEY}` } });
    const wrong = seen.filter(({ caller, status }) => status !== (caller === "none" ? 401 : 403));
    expect(wrong).toEqual([]);
    expect(seen.length).toBeGreaterThan(300);
    // Nothing was fetched, nothing stored.
    expect(targetHits).toBe(0);
    const stored = await fetch(`${server.url}/stores/proofs/data/partitions/0/last?count=100`, { headers: { authorization: `Bearer ${FULL_KEY}` } });
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject({ messages: [] });
  }, 120_000);

  test("the prover's embedded notary: every keyed route, under every spelling, refuses no key and a wrong key (401)", async () => {
    const notary = server.notary!;
    const routes = notary.routes();
    expect(keyedRoutes(routes).map((route) => route.path)).toEqual(expect.arrayContaining(["/metrics", "/session", "/proxy-session", "/proxy-session/:id/attestation"]));
    const seen = await statusesOf(notary.url, routes, { none: {}, wrong: { authorization: `Bearer ${WRONG_KEY}` }, prover: { authorization: `Bearer ${FULL_KEY}` } });
    expect(seen.filter(({ status }) => status !== 401)).toEqual([]);
    expect(targetHits).toBe(0);
  }, 120_000);

  test("a full key passes the guard on a folded spelling, which is the same route (the guard judged the route, not the text)", async () => {
    const status = await rawStatus(server.url, "GET", "/metrics/", { authorization: `Bearer ${FULL_KEY}` });
    expect(status).toBe(200);
    // A path no route answers, with a full key: not found, not refused.
    expect(await rawStatus(server.url, "GET", "/no-such-route", { authorization: `Bearer ${FULL_KEY}` })).toBe(404);
    // Open routes stay open under their folded spellings.
    expect(await rawStatus(server.url, "GET", "/healthcheck/", {})).toBe(200);
  });
});
