/**
 * What deploy/'s nginx exposes: the client routes reach a prover, the operator's routes do not, and nginx adds
 * nothing about the client (X-Forwarded-For, X-Real-IP). The provers here are two recording HTTP servers:
 * what matters is what nginx passes on, not what a prover does with it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { freePort } from "../../testkit/notary.ts";
import { scratchDir } from "../../testkit/env.ts";
import { type Nginx, endTree, nginxMissing, startNginx } from "./support.ts";

if (nginxMissing && process.env.CI === "true") throw new Error(`${nginxMissing} (CI=true: the nginx test must run)`);
if (nginxMissing) console.warn(`SKIPPING the nginx exposure test: ${nginxMissing}`);

interface Seen {
  prover: "a" | "b";
  method: string;
  path: string;
  headers: Record<string, string>;
}

describe.skipIf(nginxMissing !== undefined)("deploy/nginx/tlsproof.conf", () => {
  const seen: Seen[] = [];
  const provers: Server<undefined>[] = [];
  let nginx: Nginx;

  const recordingProver = (name: "a" | "b") =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const url = new URL(request.url);
        seen.push({ prover: name, method: request.method, path: `${url.pathname}${url.search}`, headers: Object.fromEntries(request.headers) });
        return new Response(url.pathname === "/healthcheck" ? "Ok" : "reached");
      },
    });

  beforeAll(async () => {
    provers.push(recordingProver("a"), recordingProver("b"));
    nginx = await startNginx(scratchDir("nginx-exposure"), {
      LISTEN: `127.0.0.1:${freePort()}`,
      PROVER_A: `127.0.0.1:${provers[0]!.port}`,
      PROVER_B: `127.0.0.1:${provers[1]!.port}`,
    });
  }, 60_000);

  afterAll(async () => {
    if (nginx) await endTree(nginx.process, "SIGTERM");
    for (const prover of provers) prover.stop(true);
  });

  /** Sends the request through nginx; returns its status and what the provers saw of it. */
  async function through(method: string, path: string): Promise<{ status: number; reached: Seen[] }> {
    const before = seen.length;
    const response = await fetch(`${nginx.url}${path}`, { method, ...(method === "POST" ? { body: "{}" } : {}) });
    await response.arrayBuffer();
    return { status: response.status, reached: seen.slice(before) };
  }

  const id = crypto.randomUUID();
  test.each([
    ["GET", "/proxy", "/proxy"],
    ["POST", "/proxy", "/proxy"],
    ["GET", `/proof/${id}`, `/proof/${id}`],
    ["GET", "/info", "/info"],
    ["GET", "/notaryinfo", "/notaryinfo"],
    ["GET", "/viewer", "/viewer"],
    ["GET", "/openapi.json", "/openapi.json"],
    ["GET", "/stores/proofs/data/partitions/0/last?count=1", "/stores/proofs/data/partitions/0/last?count=1"],
    ["GET", "/instance/a/info", "/info"],
    ["GET", `/instance/b/proof/${id}`, `/proof/${id}`],
  ])("%s %s reaches a prover", async (method, path, arrives) => {
    const { status, reached } = await through(method, path);
    expect(status).toBe(200);
    expect(reached.map((r) => [r.method, r.path])).toEqual([[method, arrives]]);
  });

  test.each([
    ["GET", "/metrics"],
    ["GET", "/pool"],
    ["GET", "/pools"],
    ["DELETE", "/pool/api.example.com"],
    ["GET", "/prepare"],
    ["POST", "/stores/proofs/data/partitions/0"],
    ["POST", "/stores/mystream/data/partitions/0"],
    ["POST", `/proof/${id}`],
    ["GET", "/instance/a/metrics"],
    ["GET", "/instance/b/pool"],
    ["DELETE", "/instance/a/pool/api.example.com"],
    ["GET", "/instance/a/prepare"],
  ])("%s %s is not passed on", async (method, path) => {
    const { status, reached } = await through(method, path);
    expect([403, 404]).toContain(status);
    expect(reached).toEqual([]);
  });

  test("nothing about the client is added: no X-Forwarded-For, X-Real-IP or Forwarded", async () => {
    const { reached } = await through("GET", "/proxy");
    expect(reached).toHaveLength(1);
    const names = Object.keys(reached[0]!.headers);
    for (const name of ["x-forwarded-for", "x-real-ip", "forwarded", "x-forwarded-proto", "x-forwarded-host"]) expect(names).not.toContain(name);
  });
});
