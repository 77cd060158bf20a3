import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { PoolStatus } from "../../../../src/prover/mpc/pool/pool.ts";
import { tlsFixture } from "../../../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../../../testkit/prover.ts";
import { startTarget } from "../../../../testkit/target.ts";
import { TARGET_HOST } from "../../../../testkit/tls-fixture.ts";

const KEY = "pool-routes-key";
const auth = { authorization: `Bearer ${KEY}` };

/**
 * The warm pool's run-time routes on a real `cli prover start` with API keys on: asking for sessions
 * (`GET /prepare`, Verity's `T-PREPARE` shape), seeing them (`/pool`, `/pools`), dropping them
 * (`DELETE /pool/{host}`), and the 4xx answers to bad requests. A prepared session starts a real setup;
 * the test drops it without waiting for it.
 */
describe("pool routes", () => {
  let target: Server<undefined>;
  let prover: RunningProver;
  const targetUrl = () => `https://${TARGET_HOST}:${target.port}/data/7`;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!, { PROVER_API_KEYS: KEY, PROVER_SIZE_CLASSES: "512/512,1024/2048" });
  }, 60_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 60_000);

  const prepare = (headers: Record<string, string>) => fetch(`${prover.url}/prepare`, { headers: { ...auth, ...headers } });
  async function errorCode(response: Response) {
    return { status: response.status, code: ((await response.json()) as { error: { code: string } }).error.code };
  }

  test("every pool route needs the API key", async () => {
    for (const [method, path] of [["GET", "/pool"], ["GET", "/pools"], ["GET", "/prepare"], ["DELETE", "/pool/a.test"]] as const) {
      expect({ path, status: (await fetch(`${prover.url}${path}`, { method })).status }).toEqual({ path, status: 401 });
    }
  });

  test("bad requests are 4xx with a code, before anything is set up", async () => {
    expect(await errorCode(await prepare({ "T-PROXY-URL": targetUrl() }))).toEqual({ status: 400, code: "invalid_header" });
    expect(await errorCode(await prepare({ "T-PREPARE": "two", "T-PROXY-URL": targetUrl() }))).toEqual({ status: 400, code: "invalid_header" });
    expect(await errorCode(await prepare({ "T-PREPARE": "1" }))).toEqual({ status: 400, code: "invalid_header" });
    const unknownClass = await prepare({ "T-PREPARE": "1", "T-PROXY-URL": targetUrl(), "T-SESSION-CLASS": "4096/16384" });
    expect(unknownClass.status).toBe(400);
    expect(((await unknownClass.json()) as { error: { message: string } }).error.message).toContain("512/512, 1024/2048");
    expect(await errorCode(await prepare({ "T-PREPARE": "999", "T-PROXY-URL": targetUrl() }))).toEqual({ status: 400, code: "invalid_header" });
    expect(await errorCode(await prepare({ "T-PREPARE": "1", "T-PROXY-URL": targetUrl(), "T-MAX-RECV-DATA": "99999" }))).toEqual({
      status: 400,
      code: "session_too_large",
    });
    expect((await fetch(`${prover.url}/pool/${encodeURIComponent("not a host")}`, { method: "DELETE", headers: auth })).status).toBe(400);
    const status = (await (await fetch(`${prover.url}/pool`, { headers: auth })).json()) as PoolStatus;
    expect(status).toMatchObject({ warming: 0, ready: 0, hosts: [] });
    // With its embedded notary and PROVER_POOL_IDLE unset, the prover keeps a warm session an hour.
    expect(status.idleS).toBe(3600);
  });

  test("T-PREPARE keeps sessions for the host in the class asked for; /pool and /pools show them; DELETE drops them", async () => {
    const response = await prepare({ "T-PREPARE": "1", "T-PROXY-URL": targetUrl(), "T-MAX-RECV-DATA": "400" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ host: TARGET_HOST, class: "512/512", count: 1 });

    const status = (await (await fetch(`${prover.url}/pool`, { headers: auth })).json()) as PoolStatus;
    expect(status.classes).toEqual(["512/512", "1024/2048"]);
    expect(status.hosts).toEqual([{ host: TARGET_HOST, class: "512/512", learned: false, pinned: true, share: 1, ready: 0, warming: 1 }]);
    const pools = (await (await fetch(`${prover.url}/pools`, { headers: auth })).json()) as { pools: PoolStatus["hosts"] };
    expect(pools.pools).toEqual(status.hosts);

    const dropped = await fetch(`${prover.url}/pool/${TARGET_HOST.toUpperCase()}`, { method: "DELETE", headers: auth });
    expect(await dropped.json()).toEqual({ host: TARGET_HOST, closed: 0 });
    const after = (await (await fetch(`${prover.url}/pool`, { headers: auth })).json()) as PoolStatus;
    expect(after.hosts).toEqual([]);
    expect(prover.log()).toContain("warm sessions dropped");
  });
});
