/**
 * Safe by default, through `cli prover start` (no MPC session needed): the embedded notary takes only its
 * prover's key, engine hosts inherit no secrets, proof streams are capped per client.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { request as httpRequest } from "node:http";
import { readFileSync } from "node:fs";
import { PG_URL } from "../../store/backends.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../../testkit/prover.ts";
import { errorData, openStream } from "../../../testkit/sse.ts";
import { eventually } from "../../../testkit/wait.ts";

/**
 * A proof stream held open until `close()`; `status` is the prover's answer to the subscription. The Response is
 * kept: Bun's fetch closes the connection of an unread Response once it is garbage-collected, which would give
 * the stream's place back behind the test's back.
 */
async function subscribe(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; response: Response; close(): void }> {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  // A refusal is a whole JSON body; a stream is left open.
  const body = response.ok ? "" : await response.text();
  return { status: response.status, body, response, close: () => abort.abort() };
}

/** The status of a GET sent from another loopback address than 127.0.0.1: another client for the prover. */
function statusFrom(localAddress: string, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = httpRequest(url, { localAddress }, (response) => {
      resolve(response.statusCode ?? 0);
      response.destroy();
    });
    call.on("error", reject);
    call.end();
  });
}

describe("without API keys", () => {
  let prover: RunningProver;
  beforeAll(async () => {
    prover = await startProver(SOURCE_CLI, 443, { PROVER_ENGINE_HOSTS: "1", PROVER_SSE_PER_CLIENT: "2" });
  });
  afterAll(async () => {
    await prover?.stop();
  });

  test("the embedded notary refuses every caller but its prover: it listens with a key only the prover knows", async () => {
    const match = /embedded notary started.*?\burl=(\S+)/.exec(prover.log());
    expect(match?.[1]).toStartWith("http://127.0.0.1:");
    const notary = match![1]!;
    const session = (authorization?: string) =>
      fetch(`${notary}/session`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ clientType: "Websocket", maxSentData: 1024, maxRecvData: 2048 }),
      });
    for (const response of [await session(), await session("Bearer guessed-key")]) {
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    }
    expect((await fetch(`${notary}/metrics`)).status).toBe(401);
    // What a client may know about the notary stays open.
    expect((await fetch(`${notary}/info`)).status).toBe(200);
  });

  test("proof streams are capped per client address, and a closed stream gives its place back", async () => {
    const streamUrl = () => `${prover.url}/proof/${crypto.randomUUID()}`;
    const first = await subscribe(streamUrl());
    const second = await subscribe(streamUrl());
    expect([first.status, second.status]).toEqual([200, 200]);
    // What a loaded run may do at any moment: the held streams must stay held through it.
    Bun.gc(true);
    const third = await subscribe(streamUrl());
    expect(third.status).toBe(503);
    expect(JSON.parse(third.body)).toMatchObject({ error: { code: "over_capacity" } });
    // Another client (address) is not held back by this one.
    expect(await statusFrom("127.0.0.2", streamUrl())).toBe(200);
    first.close();
    const again = await eventually(() => subscribe(streamUrl()), (s) => s.status === 200, 10_000);
    expect(again.status).toBe(200);
    for (const stream of [second, again]) stream.close();
  });
});

describe("with API keys and a database", () => {
  const secrets = {
    PROVER_API_KEYS: "full-key-7f3a,other-key-91c2",
    PROVER_NOTARY_API_KEY: "notary-key-5d1e",
    PROVER_STORE_URL: PG_URL,
  };
  const settings = {
    PROVER_ENGINE_HOSTS: "1",
    PROVER_SSE_PER_CLIENT: "2",
    PROVER_API_KEYS_SCOPED: "scoped-key-a,scoped-key-b",
    // A target outside the list is refused after its request id was taken: an outcome without an MPC session.
    PROVER_ALLOWED_HOSTS: "allowed.example",
    // Where /prepare may keep sessions warm: the hosts start with the first session placed.
    PROVER_RESOLVE: "allowed.example:443:127.0.0.1",
    ...secrets,
  };
  let prover: RunningProver;
  beforeAll(async () => {
    prover = await startProver(SOURCE_CLI, 443, settings);
  });
  afterAll(async () => {
    await prover?.stop();
  });
  const auth = (key: string) => ({ authorization: `Bearer ${key}` });

  test("engine hosts get only what the runtime needs: no store URL, no API key, no notary key", async () => {
    // A warm session asked for starts the host; it is dropped once the host has been read.
    const prepared = await fetch(`${prover.url}/prepare`, { headers: { ...auth("full-key-7f3a"), "T-PREPARE": "1", "T-PROXY-URL": "https://allowed.example/" } });
    expect(prepared.status).toBe(200);
    const hosts = async () =>
      ((await (await fetch(`${prover.url}/pool`, { headers: auth("full-key-7f3a") })).json()) as { engineHosts: { hosts: { pid: number }[] } }).engineHosts.hosts;
    const pids = (await eventually(hosts, (list) => list.length > 0, 10_000)).map((host) => host.pid);
    expect(pids.length).toBe(1);
    for (const pid of pids) {
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
      const names = environ.map((entry) => entry.slice(0, entry.indexOf("=")));
      // Read from the right process: the runtime's own variables are there.
      expect(names).toContain("PATH");
      expect(names.filter((name) => name.startsWith("PROVER_") || name.startsWith("TLSN_"))).toEqual([]);
      for (const value of [...Object.values(secrets), "full-key-7f3a", "other-key-91c2", "scoped-key-a"]) {
        expect(environ.some((entry) => entry.includes(value))).toBe(false);
      }
    }
    expect((await fetch(`${prover.url}/pool/allowed.example`, { method: "DELETE", headers: auth("full-key-7f3a") })).status).toBe(200);
  });

  test("proof streams are capped per API key", async () => {
    const streamUrl = () => `${prover.url}/proof/${crypto.randomUUID()}`;
    const held = [await subscribe(streamUrl(), auth("full-key-7f3a")), await subscribe(streamUrl(), auth("full-key-7f3a"))];
    expect(held.map((s) => s.status)).toEqual([200, 200]);
    Bun.gc(true);
    const refused = await subscribe(streamUrl(), auth("full-key-7f3a"));
    expect(refused.status).toBe(503);
    const otherKey = await subscribe(streamUrl(), auth("other-key-91c2"));
    expect(otherKey.status).toBe(200);
    for (const stream of [...held, otherKey]) stream.close();
  });

  /** A /proxy call the prover refuses after taking its id (target_forbidden): the id then has an outcome. */
  async function refusedRequest(key: string): Promise<string> {
    const requestId = crypto.randomUUID();
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { ...auth(key), "T-PROXY-URL": "https://elsewhere.example/", "T-REQUEST-ID": requestId },
    });
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("target_forbidden");
    return requestId;
  }
  const proofEvent = async (requestId: string, key: string) => {
    const response = await fetch(`${prover.url}/proof/${requestId}`, { headers: auth(key) });
    return { status: response.status, text: await response.text() };
  };

  test("a scoped key reads the outcomes of its own requests only; full keys read any", async () => {
    const own = await refusedRequest("scoped-key-a");
    expect((await proofEvent(own, "scoped-key-a")).text).toContain('"code":"target_forbidden"');
    expect((await proofEvent(own, "full-key-7f3a")).text).toContain('"code":"target_forbidden"');
    const another = await proofEvent(own, "scoped-key-b");
    expect(another.status).toBe(403);
    expect(JSON.parse(another.text)).toMatchObject({ error: { code: "forbidden" } });
    const fullKeys = await refusedRequest("full-key-7f3a");
    expect((await proofEvent(fullKeys, "scoped-key-a")).status).toBe(403);
  });

  test("a scoped key subscribed before another key used the id gets forbidden, not that request's outcome", async () => {
    const requestId = crypto.randomUUID();
    const early = await openStream(`${prover.url}/proof/${requestId}`, 30_000, { headers: auth("scoped-key-a") });
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { ...auth("scoped-key-b"), "T-PROXY-URL": "https://elsewhere.example/", "T-REQUEST-ID": requestId },
    });
    expect(response.status).toBe(403);
    const [event] = await early.events;
    expect(errorData(event!).code).toBe("forbidden");
    expect(event!.data).not.toContain("target_forbidden");
  });

  test("a scoped key may not use the operator's routes", async () => {
    for (const path of ["/pool", "/metrics", "/stores/proofs/data/partitions/0/last"]) {
      const response = await fetch(`${prover.url}${path}`, { headers: auth("scoped-key-a") });
      expect(response.status).toBe(403);
    }
  });

  test("which key made a request is kept in the store: it holds after a restart", async () => {
    const own = await refusedRequest("scoped-key-a");
    await prover.stop();
    prover = await startProver(SOURCE_CLI, 443, { ...settings, PROVER_DATA_DIR: prover.dataDir });
    expect((await proofEvent(own, "scoped-key-b")).status).toBe(403);
    expect((await proofEvent(own, "scoped-key-a")).text).toContain('"code":"target_forbidden"');
  });
});
