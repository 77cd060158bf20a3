/**
 * The message store through a real `cli prover start` process (SQLite in its data folder): error bodies as each
 * route family promises them, who may read and write the proofs stream, and the store's abuse limits. Nothing
 * here starts an MPC session.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { type NodeKey, verifyStoreResponse, type MessageObject, type ResponseMetadata } from "../../src/store/index.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { eventually } from "../../testkit/wait.ts";

const KEY = "store-key-4b9e1f0c7a";
const bearer = { authorization: `Bearer ${KEY}` };
const UNUSED_TARGET_PORT = 9;

async function bodyOf(response: Response): Promise<{ status: number; body: unknown; retryAfter: string | null }> {
  return { status: response.status, body: await response.json(), retryAfter: response.headers.get("retry-after") };
}

describe("store through the prover, API keys on, 2 store streams at most", () => {
  let prover: RunningProver;
  let nodeAddress: string;
  const store = (path: string) => `${prover.url}/stores/${path}`;
  const publish = (stream: string, body: unknown, partition = "0") =>
    fetch(store(`${stream}/data/partitions/${partition}`), { method: "POST", headers: { "content-type": "application/json", ...bearer }, body: JSON.stringify(body) });

  beforeAll(async () => {
    prover = await startProver(SOURCE_CLI, UNUSED_TARGET_PORT, {
      PROVER_API_KEYS: KEY,
      PROVER_STORE_STREAMS: "2",
      PROVER_MAX_BODY_BYTES: String(16 * 1024 * 1024),
    });
    nodeAddress = ((await (await fetch(`${prover.url}/info`)).json()) as { nodeAddress: NodeKey["address"] }).nodeAddress;
  }, 90_000);
  afterAll(async () => {
    expect(await prover?.stop()).toBe(0);
  }, 120_000);

  describe("error bodies", () => {
    test("a bad store query is 400 {error: <reference text>}", async () => {
      expect(await bodyOf(await fetch(store("s/data/partitions/0/last?count=ten")))).toEqual({
        status: 400,
        body: { error: 'Query parameter "count" not a number: ten' },
        retryAfter: null,
      });
      expect(await bodyOf(await fetch(store("s/data/partitions/0/newest")))).toMatchObject({ status: 400, body: { error: "Unknown query type: newest (expected one of last, from, range)" } });
    });

    test("a bad publish is 400 {error: <message>}", async () => {
      const notJson = await fetch(store("s/data/partitions/0"), { method: "POST", headers: bearer, body: "{nope" });
      expect(await bodyOf(notJson)).toMatchObject({ status: 400, body: { error: "Body is not valid JSON" } });
      expect(await bodyOf(await publish("s", { content: 1, extra: true }))).toMatchObject({ status: 400, body: { error: 'entry 0: unknown key "extra"' } });
    });

    test("an unknown route answers in the shape of its family: with keys on, to a caller with a key; without one it is 401", async () => {
      expect(await bodyOf(await fetch(`${prover.url}/nothing/here`, { headers: bearer }))).toMatchObject({ status: 404, body: { error: { code: "not_found", message: "no such route" } } });
      expect(await bodyOf(await fetch(store("s/nothing"), { headers: bearer }))).toMatchObject({ status: 404, body: { error: "no such route" } });
      // A path no route answers is judged as a keyed one (src/http/route-guard.ts), in its family's shape.
      expect(await bodyOf(await fetch(`${prover.url}/nothing/here`))).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
      expect(await bodyOf(await fetch(store("s/nothing")))).toMatchObject({ status: 401, body: { error: "an API key is required: Authorization: Bearer <key>" } });
    });

    test("a prover-route error is {error: {code, message}}; a missing key on a store route is {error: <message>}", async () => {
      const proxy = await bodyOf(await fetch(`${prover.url}/proxy`, { headers: bearer }));
      expect(proxy).toMatchObject({ status: 400, body: { error: { code: "invalid_header" } } });
      expect(typeof (proxy.body as { error: { message: unknown } }).error.message).toBe("string");
      expect(await bodyOf(await fetch(`${prover.url}/proxy`))).toMatchObject({ status: 401, body: { error: { code: "unauthorized" } } });
      const storeAuth = await fetch(store("s/data/partitions/0"), { method: "POST", body: "{}" });
      expect(storeAuth.headers.get("www-authenticate")).toBe("Bearer");
      expect(await bodyOf(storeAuth)).toMatchObject({ status: 401, body: { error: "an API key is required: Authorization: Bearer <key>" } });
    });
  });

  describe("the proofs stream", () => {
    test("is written only by the prover: the crafted far-future POST is refused, with or without a key", async () => {
      const crafted = { content: { fake: true }, timestamp: Number.MAX_SAFE_INTEGER, sequenceNumber: Number.MAX_SAFE_INTEGER };
      expect(await bodyOf(await publish("proofs", crafted))).toMatchObject({ status: 403, body: { error: "Stream proofs is written only by the prover" } });
      expect(await bodyOf(await publish("proofs", { content: { fake: true } }))).toMatchObject({ status: 403 });
      expect(await bodyOf(await publish("proof%73", { content: { fake: true } }))).toMatchObject({ status: 403 });
      const read = await fetch(store("proofs/data/partitions/0/last?count=10"), { headers: bearer });
      expect(((await read.json()) as { messages: unknown[] }).messages).toEqual([]);
    });

    test("needs a key to be read when API keys are on; other streams stay public", async () => {
      expect(await bodyOf(await fetch(store("proofs/data/partitions/0/last")))).toMatchObject({ status: 401, body: { error: "an API key is required: Authorization: Bearer <key>" } });
      expect((await fetch(store("proof%73/data/partitions/0/last"))).status).toBe(401);
      expect((await fetch(store("proofs/data/partitions/0/from?fromTimestamp=0"), { headers: { authorization: "Bearer wrong" } })).status).toBe(403);
      expect((await fetch(store("proofs/data/partitions/0/last"), { headers: bearer })).status).toBe(200);
      expect((await fetch(store("anything/data/partitions/0/last"))).status).toBe(200);
    });
  });

  describe("caller-given ids", () => {
    test("timestamps beyond 10 minutes from now and sequence numbers above 2^31-1 are refused; within them accepted", async () => {
      const now = Date.now();
      const far = await bodyOf(await publish("clock", { content: 1, timestamp: Number.MAX_SAFE_INTEGER }));
      expect(far.status).toBe(400);
      expect((far.body as { error: string }).error).toContain("is more than 10 minutes from the node's clock");
      expect((await publish("clock", { content: 1, timestamp: now + 11 * 60_000 })).status).toBe(400);
      expect((await publish("clock", { content: 1, timestamp: now - 11 * 60_000 })).status).toBe(400);
      const seq = await bodyOf(await publish("clock", { content: 1, sequenceNumber: Number.MAX_SAFE_INTEGER }));
      expect(seq.status).toBe(400);
      expect((seq.body as { error: string }).error).toContain("entry 0: sequenceNumber: must be at most 2147483647");
      expect((await publish("clock", { content: 1, timestamp: now - 9 * 60_000, sequenceNumber: 2 ** 31 - 1 })).status).toBe(200);
      // The chain was not pushed into the future: an entry without ids is stamped now.
      const later = (await (await publish("clock", { content: 2 })).json()) as { messages: { id: { timestamp: number } }[] };
      expect(later.messages[0]!.id.timestamp).toBeLessThan(Date.now() + 1000);
    });
  });

  describe("limits", () => {
    test("a partition above 2^31-1 is a 400, for reads and publishes", async () => {
      const error = { error: 'Path parameter "partition" must be at most 2147483647: 2147483648' };
      expect(await bodyOf(await fetch(store("s/data/partitions/2147483648/last")))).toMatchObject({ status: 400, body: error });
      expect(await bodyOf(await publish("s", { content: 1 }, "2147483648"))).toMatchObject({ status: 400, body: error });
      expect((await publish("s", { content: 1 }, "2147483647")).status).toBe(200);
    });

    test("a publish holds at most 100 entries (each costs a signature)", async () => {
      const many = (n: number) => Array.from({ length: n }, (_, i) => ({ content: { i } }));
      expect(await bodyOf(await publish("cost", many(101)))).toMatchObject({ status: 400, body: { error: "at most 100 entries per request" } });
      expect((await publish("cost", many(100))).status).toBe(200);
    });

    test("a huge count answers what there is", async () => {
      for (let i = 0; i < 3; i++) expect((await publish("count", { content: { i } })).status).toBe(200);
      const answer = (await (await fetch(store(`count/data/partitions/0/last?count=${Number.MAX_SAFE_INTEGER}`))).json()) as { messages: MessageObject[] };
      expect(answer.messages.map((m) => m.content)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    });

    test("SSE answers beyond PROVER_STORE_STREAMS are 503 with Retry-After; a closed one gives its place back", async () => {
      // 200 messages of 100 kB: far more than socket buffers hold, so a reader that stops reading keeps its answer open.
      const pad = "x".repeat(100_000);
      for (let batch = 0; batch < 2; batch++) {
        expect((await publish("big", Array.from({ length: 100 }, (_, i) => ({ content: { i, pad } })))).status).toBe(200);
      }
      const stalled = await Promise.all([openStalledStream(prover.url, "big"), openStalledStream(prover.url, "big")]);
      const third = await fetch(store("big/data/partitions/0/from?fromTimestamp=0"), { headers: { accept: "text/event-stream" } });
      expect(await bodyOf(third)).toEqual({ status: 503, body: { error: "the store is streaming its maximum of 2 answers" }, retryAfter: "5" });
      // Plain HTTP answers are not streams and stay available.
      expect((await fetch(store("big/data/partitions/0/last?count=2"))).status).toBe(200);

      stalled[0]!.destroy();
      // The destroyed reader's slot is given back once the server sees its socket close.
      const streamStatus = async () => {
        const again = await fetch(store("big/data/partitions/0/last?count=1"), { headers: { accept: "text/event-stream" } });
        await again.body?.cancel();
        return again.status;
      };
      expect(await eventually(streamStatus, (status) => status === 200, 10_000)).toBe(200);
      stalled[1]!.destroy();
    }, 60_000);
  });

  describe("signed answers", () => {
    test("cover the query: the node's answer to a narrower query does not pass for the one asked", async () => {
      for (let i = 0; i < 3; i++) expect((await publish("signed", { content: { i } })).status).toBe(200);
      const requestId = crypto.randomUUID();
      const narrower = (await (await fetch(store(`signed/data/partitions/0/last?count=1&verifyNetworkResponses=true&requestId=${requestId}`))).json()) as {
        messages: MessageObject[];
        metadata: ResponseMetadata;
      };
      const asked = { requestId, streamId: "signed", partition: 0, queryType: "last", parameters: { count: "3" } };
      expect(verifyStoreResponse(narrower, nodeAddress, { ...asked, parameters: { count: "1" } })).toBe(true);
      expect(verifyStoreResponse(narrower, nodeAddress, asked)).toBe(false);
      expect(verifyStoreResponse(narrower, nodeAddress, { ...asked, parameters: { count: "1" }, streamId: "proofs" })).toBe(false);
      expect(verifyStoreResponse(narrower, nodeAddress, { ...asked, parameters: { count: "1" }, requestId: crypto.randomUUID() })).toBe(false);
    });
  });
});

describe("store through the prover, API keys on, PROVER_PUBLIC_PROOFS=1", () => {
  let prover: RunningProver;
  beforeAll(async () => {
    prover = await startProver(SOURCE_CLI, UNUSED_TARGET_PORT, { PROVER_API_KEYS: KEY, PROVER_PUBLIC_PROOFS: "1" });
  }, 90_000);
  afterAll(async () => {
    expect(await prover?.stop()).toBe(0);
  }, 120_000);

  test("the proofs stream is readable without a key; publishing still needs one and is still refused there", async () => {
    expect((await fetch(`${prover.url}/stores/proofs/data/partitions/0/last`)).status).toBe(200);
    expect((await fetch(`${prover.url}/stores/proofs/data/partitions/0`, { method: "POST", body: "{}" })).status).toBe(401);
    expect((await fetch(`${prover.url}/proof/${crypto.randomUUID()}`)).status).toBe(401);
  });
});

/** Opens an SSE store answer on a raw socket, reads its first bytes, then stops reading (the socket stays open). */
function openStalledStream(base: string, stream: string): Promise<Socket> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(`GET /stores/${stream}/data/partitions/0/from?fromTimestamp=0 HTTP/1.1\r\nHost: ${hostname}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    socket.once("data", (chunk) => {
      socket.pause();
      if (!chunk.toString("latin1").startsWith("HTTP/1.1 200")) reject(new Error(`stream refused: ${chunk.toString("latin1").slice(0, 200)}`));
      else resolve(socket);
    });
    socket.once("error", reject);
  });
}
