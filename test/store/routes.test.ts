/** The HTTP routes over a real store on each backend, through a real listening server. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { addressOfSecretKey } from "../../src/core/eth-signature.ts";
import { errorHandling } from "../../src/http/error-handling.ts";
import { createLogger } from "../../src/base/log.ts";
import { DEFAULT_PROOF_STREAM, loadNodeKey, verifyStoreResponse, type MessageObject, type NodeKey, type RawMessage, type ResponseMetadata } from "../../src/store/index.ts";
import { createSignedMessage, storedMessageOf, type MessageId } from "../../src/store/message.ts";
import { storeRoutes } from "../../src/store/routes.ts";
import { backends, type OpenedStore } from "./backends.ts";

interface PublishAnswer {
  messages: { id: MessageId; duplicate: boolean }[];
}
interface ObjectAnswer {
  messages: MessageObject[];
  metadata: ResponseMetadata;
}

/** The store routes as the prover composes them: with the one error hook that shapes store errors. */
const storeApp = (opened: OpenedStore, nodeKey: NodeKey) =>
  new Elysia().use(errorHandling(createLogger({ level: "error" }), () => "log-store")).use(storeRoutes({ store: opened.store, nodeKey, proofStream: DEFAULT_PROOF_STREAM, places: { pages: 16, streams: 4, perClient: 8 }, publishQuota: { callerBytesPerMinute: Number.MAX_SAFE_INTEGER, streamBytes: Number.MAX_SAFE_INTEGER }, clientOf: () => "one client" }));

/** A timestamp a few minutes back: caller-given timestamps must lie within the node's clock skew. */
const recent = Date.now() - 5 * 60_000;

/** Messages with placeholder signatures, written straight to the store: fast bulk data for reading tests. */
function bulkMessages(streamId: string, count: number, startTimestamp: number) {
  return Array.from({ length: count }, (_, i) => {
    const id: MessageId = { streamId, streamPartition: 0, timestamp: startTimestamp + Math.floor(i / 2), sequenceNumber: i % 2, publisherId: "0x" + "ab".repeat(20), msgChainId: "bulk" };
    const raw: RawMessage = [32, [streamId, 0, id.timestamp, id.sequenceNumber, id.publisherId, "bulk"], null, 27, 0, 0, null, JSON.stringify({ i }), null, 2, "0x00"];
    return storedMessageOf(raw);
  });
}

/** SSE events as [event name, data] pairs; also checks the framing (every event ends with a blank line). */
function parseSse(text: string): [string, string][] {
  expect(text.endsWith("\n\n")).toBe(true);
  return text
    .slice(0, -2)
    .split("\n\n")
    .map((block) => {
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
        else throw new Error(`unexpected SSE line: ${line}`);
      }
      return [event, data.join("\n")];
    });
}

for (const backend of backends) {
  describe(`store routes on ${backend.name}`, () => {
    let opened: OpenedStore;
    let nodeKey: NodeKey;
    let base: string;
    let stop: () => void;

    beforeAll(async () => {
      opened = await backend.open();
      nodeKey = loadNodeKey(opened.dataDir);
      const app = storeApp(opened, nodeKey).listen(0);
      base = `http://127.0.0.1:${app.server?.port}`;
      stop = () => void app.stop(true);
    }, 120_000);
    afterAll(async () => {
      stop();
      await opened.cleanup();
    }, 120_000);

    const url = (stream: string, rest: string) => `${base}/stores/${encodeURIComponent(stream)}/data/partitions/${rest}`;
    const publish = (stream: string, body: unknown, partition = 0) =>
      fetch(url(stream, String(partition)), { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
    const getJson = async <T>(stream: string, rest: string, init?: RequestInit): Promise<{ status: number; body: T }> => {
      const response = await fetch(url(stream, rest), init);
      return { status: response.status, body: (await response.json()) as T };
    };

    test("publishes node-signed content: ids, sequence numbers per chain, prevMsgRef chaining, signatures", async () => {
      const [t1, t2] = [recent, recent + 1000];
      const response = await publish("a/chain", [{ content: { n: 1 }, timestamp: t1 }, { content: { n: 2 }, timestamp: t1 }, { content: [3], timestamp: t2 }, { content: "x", msgChainId: "other", timestamp: t1 }]);
      expect(response.status).toBe(200);
      const { messages } = (await response.json()) as PublishAnswer;
      expect(messages.map((m) => [m.id.timestamp, m.id.sequenceNumber, m.id.msgChainId, m.id.publisherId, m.duplicate])).toEqual([
        [t1, 0, "main", nodeKey.address, false],
        [t1, 1, "main", nodeKey.address, false],
        [t2, 0, "main", nodeKey.address, false],
        [t1, 0, "other", nodeKey.address, false],
      ]);
      // Without a timestamp the node's clock stamps it (t2 lies minutes back, so "after t2" alone proves nothing).
      const clockBefore = Date.now();
      const later = (await (await publish("a/chain", { content: 4 })).json()) as PublishAnswer;
      const clockAfter = Date.now();
      expect(later.messages[0]?.id.timestamp).toBeGreaterThanOrEqual(clockBefore);
      expect(later.messages[0]?.id.timestamp).toBeLessThanOrEqual(clockAfter);

      const raw = await fetch(url("a/chain", `0/range?fromTimestamp=0&toTimestamp=${t2 + 1000}&publisherId=${nodeKey.address}&msgChainId=main&format=raw`));
      const lines = (await raw.text()).split("\n");
      const stored = lines.slice(0, -1).map((line) => JSON.parse(line) as RawMessage);
      expect(stored.map((m) => [m[1][2], m[1][3], m[2], m[7]])).toEqual([
        [t1, 0, null, '{"n":1}'],
        [t1, 1, [t1, 0], '{"n":2}'],
        [t2, 0, [t1, 1], "[3]"],
      ]);
      const { isSignatureValid } = await import("../../src/store/message.ts");
      expect(stored.every(isSignatureValid)).toBe(true);
      expect(JSON.parse(lines.at(-1) ?? "")).toEqual({ hasNext: false, totalMessages: 3 });
    });

    test("a stream's bytes are both texts of its messages; a prune deletes the older messages of every stream but the one kept", async () => {
      const at = (stream: string, ts: number, text: string) =>
        storedMessageOf([32, [stream, 0, ts, 0, "0x" + "ab".repeat(20), "bulk"], null, 27, 0, 0, null, JSON.stringify({ text }), null, 2, "0x00"]);
      const messages = [at("prune/a", 1_000, "old"), at("prune/a", 3_000, "new"), at("prune/b", 1_000, "old"), at("prune/kept", 1_000, "old")];
      await opened.store.insert(messages);
      const [first, second] = messages;
      expect(await opened.store.streamBytes("prune/a")).toBe(first!.raw.length + first!.object.length + second!.raw.length + second!.object.length);
      expect(await opened.store.streamBytes("prune/none")).toBe(0);
      // Other tests' messages are recent: a cut at 2,000 ms after the epoch touches only these.
      expect(await opened.store.pruneMessages(2_000, "prune/kept")).toBe(2);
      const left = async (stream: string) => (await getJson<ObjectAnswer>(stream, "0/last?count=10")).body.messages.map((m) => (m.content as { text: string }).text);
      expect(await left("prune/a")).toEqual(["new"]);
      expect(await left("prune/b")).toEqual([]);
      expect(await left("prune/kept")).toEqual(["old"]);
    });

    test("a plain answer ends at its byte budget with hasNext and where to continue; continuing with from reads the rest in order", async () => {
      // 12 messages of 700 KB: 8.4 MB, twice the 4 MiB a plain answer may hold.
      const big = (i: number) => ({ i, pad: "x".repeat(700_000) });
      const messages = Array.from({ length: 12 }, (_, i) => {
        const id: MessageId = { streamId: "big", streamPartition: 0, timestamp: recent + i, sequenceNumber: 0, publisherId: "0x" + "ab".repeat(20), msgChainId: "bulk" };
        const raw: RawMessage = [32, ["big", 0, id.timestamp, 0, id.publisherId, "bulk"], null, 27, 0, 0, null, JSON.stringify(big(i)), null, 2, "0x00"];
        return storedMessageOf(raw);
      });
      await opened.store.insert(messages);
      const first = await getJson<ObjectAnswer>("big", "0/last?count=5000");
      expect(first.status).toBe(200);
      const shown = first.body.messages.map((m) => (m.content as { i: number }).i);
      // At most 4 MiB: 5 of them (3.5 MB); the 6th would pass the budget.
      expect(shown).toEqual([0, 1, 2, 3, 4]);
      expect(first.body.metadata).toEqual({ hasNext: true, nextTimestamp: recent + 5, nextSequenceNumber: 0, totalMessages: 5 });
      const seen = [...shown];
      let next = first.body.metadata;
      while (next.hasNext) {
        const page = await getJson<ObjectAnswer>("big", `0/from?fromTimestamp=${next.nextTimestamp}&fromSequenceNumber=${next.nextSequenceNumber}`);
        expect(page.body.messages.length).toBeGreaterThan(0);
        seen.push(...page.body.messages.map((m) => (m.content as { i: number }).i));
        next = page.body.metadata;
      }
      expect(seen).toEqual([...Array(12).keys()]);
      // One message larger than the budget still comes, alone: an answer is never empty while messages remain.
      const huge = storedMessageOf([32, ["huge", 0, recent, 0, "0x" + "ab".repeat(20), "bulk"], null, 27, 0, 0, null, JSON.stringify({ pad: "y".repeat(5_000_000) }), null, 2, "0x00"]);
      await opened.store.insert([huge, storedMessageOf([32, ["huge", 0, recent + 1, 0, "0x" + "ab".repeat(20), "bulk"], null, 27, 0, 0, null, "{}", null, 2, "0x00"])]);
      const alone = await getJson<ObjectAnswer>("huge", "0/last?count=2");
      expect(alone.body.messages).toHaveLength(1);
      expect(alone.body.metadata).toMatchObject({ hasNext: true, nextTimestamp: recent + 1, totalMessages: 1 });
    }, 60_000);

    test("a chain never goes backwards; replaying a stored id is answered as a duplicate and stored once", async () => {
      expect((await publish("b", { content: 1, timestamp: recent, sequenceNumber: 4 })).status).toBe(200);
      const replay = (await (await publish("b", { content: "changed", timestamp: recent, sequenceNumber: 4 })).json()) as PublishAnswer;
      expect(replay.messages[0]).toMatchObject({ id: { timestamp: recent, sequenceNumber: 4 }, duplicate: true });
      const backwards = await publish("b", { content: 1, timestamp: recent - 1 });
      expect(backwards.status).toBe(400);
      expect(((await backwards.json()) as { error: string }).error).toContain(`is not after the last message (${recent}, 4)`);
      const { body } = await getJson<ObjectAnswer>("b", "0/last?count=10");
      expect(body.messages.map((m) => m.content)).toEqual([1]);
    });

    test("accepts RawMessages signed by anyone, refuses bad signatures, other streams and malformed input", async () => {
      const secretKey = secp256k1.utils.randomSecretKey();
      const publisherId = addressOfSecretKey(secretKey);
      const id: MessageId = { streamId: "c", streamPartition: 2, timestamp: recent, sequenceNumber: 0, publisherId, msgChainId: "x" };
      const signed = createSignedMessage(id, null, '{"hello":"world"}', secretKey);
      const ok = (await (await publish("c", signed, 2)).json()) as PublishAnswer;
      expect(ok.messages).toEqual([{ id, duplicate: false }]);
      const dup = (await (await publish("c", [signed, signed], 2)).json()) as PublishAnswer;
      expect(dup.messages.map((m) => m.duplicate)).toEqual([true, true]);

      const forged = [...signed] as RawMessage;
      forged[7] = '{"hello":"mallory"}';
      const refusals: [unknown, number, string][] = [
        [forged, 2, "signature does not verify"],
        [signed, 3, "message is for c/2, not c/3"],
        [{ content: 1, extra: true }, 2, 'entry 0: unknown key "extra"'],
        [{ timestamp: recent }, 2, 'entry 0: missing key "content"'],
        [{ content: 1, timestamp: -5 }, 2, "entry 0: timestamp: "],
        [[], 2, "no entries"],
        [[32, "nonsense"], 2, "entry 0"],
        [Array.from({ length: 101 }, () => ({ content: 1 })), 2, "at most 100 entries"],
      ];
      for (const [body, partition, message] of refusals) {
        const response = await publish("c", body, partition);
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: string }).error).toContain(message);
      }
      const notJson = await fetch(url("c", "2"), { method: "POST", body: "{nope" });
      expect(notJson.status).toBe(400);
      expect(await notJson.json()).toEqual({ error: "Body is not valid JSON" });
      const badPartition = await publish("c", { content: 1 }, -1);
      expect(badPartition.status).toBe(400);

      const { body } = await getJson<ObjectAnswer>("c", "2/last?count=5");
      expect(body.messages).toHaveLength(1);
      expect(body.messages[0]?.content).toEqual({ hello: "world" });
    });

    test("the proofs stream is not writable from outside: 403, nothing stored", async () => {
      const response = await publish(DEFAULT_PROOF_STREAM, { content: { fake: "proof" } });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ error: "Stream proofs is written only by the prover" });
      expect((await getJson<ObjectAnswer>(DEFAULT_PROOF_STREAM, "0/last?count=10")).body.messages).toEqual([]);
    });

    test("a write to the proofs stream is refused before its body is read: 403 whatever it carries", async () => {
      for (const body of ["{nope", JSON.stringify({ content: 1, timestamp: Number.MAX_SAFE_INTEGER }), JSON.stringify([])]) {
        const response = await fetch(url(DEFAULT_PROOF_STREAM, "0"), { method: "POST", body });
        expect(response.status).toBe(403);
        expect(await response.json()).toEqual({ error: "Stream proofs is written only by the prover" });
      }
    });

    describe("queries over 5003 messages", () => {
      const stream = "bulk";
      beforeAll(async () => {
        await opened.store.insert(bulkMessages(stream, 5003, 10_000));
      });
      const contents = (answer: ObjectAnswer) => answer.messages.map((m) => (m.content as { i: number }).i);

      test("last: newest count, oldest first; negative count gives the first |count|; count=0 gives none", async () => {
        expect(contents((await getJson<ObjectAnswer>(stream, "0/last?count=3")).body)).toEqual([5000, 5001, 5002]);
        expect(contents((await getJson<ObjectAnswer>(stream, "0/last")).body)).toEqual([5002]);
        expect(contents((await getJson<ObjectAnswer>(stream, "0/last?count=-2")).body)).toEqual([0, 1]);
        expect((await getJson<ObjectAnswer>(stream, "0/last?count=0")).body).toEqual({ messages: [], metadata: { hasNext: false, totalMessages: 0 } });
      });

      test("plain HTTP stops at 5000 and names the first message not returned", async () => {
        const { body } = await getJson<ObjectAnswer>(stream, "0/from?fromTimestamp=0");
        expect(body.messages).toHaveLength(5000);
        expect(body.metadata).toEqual({ hasNext: true, nextTimestamp: 12_500, nextSequenceNumber: 0, totalMessages: 5000 });
        const rest = await getJson<ObjectAnswer>(stream, `0/from?fromTimestamp=${body.metadata.nextTimestamp}&fromSequenceNumber=${body.metadata.nextSequenceNumber}`);
        expect(contents(rest.body)).toEqual([5000, 5001, 5002]);
        expect(rest.body.metadata).toEqual({ hasNext: false, totalMessages: 3 });
        const last = await getJson<ObjectAnswer>(stream, "0/last?count=5002");
        expect(contents(last.body).slice(0, 2)).toEqual([1, 2]);
        expect(last.body.metadata).toMatchObject({ hasNext: true, nextTimestamp: 12_500, nextSequenceNumber: 1 });
      });

      test("range is inclusive on (timestamp, sequenceNumber) at both ends; toSequenceNumber=0 means 0", async () => {
        const q = (params: string) => getJson<ObjectAnswer>(stream, `0/range?${params}`).then(({ body }) => contents(body));
        expect(await q("fromTimestamp=10001&fromSequenceNumber=1&toTimestamp=10003&toSequenceNumber=0")).toEqual([3, 4, 5, 6]);
        expect(await q("fromTimestamp=10001&toTimestamp=10002")).toEqual([2, 3, 4, 5]);
        expect(await q(`fromTimestamp=10000&toTimestamp=10000&publisherId=0x${"ab".repeat(20)}&msgChainId=bulk`)).toEqual([0, 1]);
        expect(await q(`fromTimestamp=10000&toTimestamp=10000&publisherId=0x${"cd".repeat(20)}&msgChainId=bulk`)).toEqual([]);
        expect(contents((await getJson<ObjectAnswer>(stream, `0/from?fromTimestamp=12501&publisherId=0x${"ab".repeat(20)}`)).body)).toEqual([5002]);
      });

      test("SSE: proper framing, one data event per message, no limit, metadata last", async () => {
        const response = await fetch(url(stream, "0/from?fromTimestamp=0&format=raw"), { headers: { accept: "application/json, text/event-stream" } });
        expect(response.headers.get("content-type")).toStartWith("text/event-stream");
        const events = parseSse(await response.text());
        expect(events).toHaveLength(5004);
        expect(events.slice(0, -1).every(([event]) => event === "message")).toBe(true);
        expect((JSON.parse(events[5002]?.[1] ?? "") as RawMessage)[7]).toBe('{"i":5002}');
        expect(events.at(-1)).toEqual(["metadata", JSON.stringify({ hasNext: false, totalMessages: 5003 })]);
        const objects = parseSse(await (await fetch(url(stream, "0/last?count=2"), { headers: { accept: "text/event-stream" } })).text());
        expect(objects.slice(0, 2).map(([, data]) => (JSON.parse(data) as MessageObject).content)).toEqual([{ i: 5001 }, { i: 5002 }]);
      });

      test("verifyNetworkResponses: the node's signature checks for raw, object and SSE answers, and fails when tampered", async () => {
        const expect4 = { requestId: crypto.randomUUID(), streamId: stream, partition: 0, queryType: "last", parameters: { count: "4" } };
        const rawText = await (await fetch(url(stream, `0/last?count=4&format=raw&verifyNetworkResponses=true&requestId=${expect4.requestId}`))).text();
        const lines = rawText.split("\n");
        const metadata = JSON.parse(lines.at(-1) ?? "") as ResponseMetadata;
        const messages = lines.slice(0, -1).map((l) => JSON.parse(l) as RawMessage);
        expect(metadata.participatingNodesAddress).toEqual([nodeKey.address]);
        expect(metadata.requestId).toBe(expect4.requestId);
        expect(verifyStoreResponse({ messages, metadata }, nodeKey.address, expect4)).toBe(true);
        expect(verifyStoreResponse({ messages: messages.slice(1), metadata: { ...metadata, totalMessages: 3 } }, nodeKey.address, expect4)).toBe(false);
        expect(verifyStoreResponse({ messages: [...messages].reverse(), metadata }, nodeKey.address, expect4)).toBe(false);
        expect(verifyStoreResponse({ messages, metadata: { ...metadata, hasNext: true } }, nodeKey.address, expect4)).toBe(false);
        expect(verifyStoreResponse({ messages, metadata }, "0x" + "11".repeat(20), expect4)).toBe(false);

        const fromId = crypto.randomUUID();
        const object = (await getJson<ObjectAnswer>(stream, `0/from?fromTimestamp=0&verifyNetworkResponses=true&requestId=${fromId}`)).body;
        const expectFrom = { requestId: fromId, streamId: stream, partition: 0, queryType: "from", parameters: { fromTimestamp: "0" } };
        expect(object.metadata.hasNext).toBe(true);
        expect(verifyStoreResponse(object, nodeKey.address, expectFrom)).toBe(true);
        const changed = structuredClone(object);
        (changed.messages[10] as MessageObject).content = { i: -1 };
        expect(verifyStoreResponse(changed, nodeKey.address, expectFrom)).toBe(false);

        const requestId = crypto.randomUUID();
        const sse = parseSse(await (await fetch(url(stream, `0/last?count=7000&verifyNetworkResponses=true&requestId=${requestId}`), { headers: { accept: "text/event-stream" } })).text());
        const sseMetadata = JSON.parse(sse.at(-1)?.[1] ?? "") as ResponseMetadata;
        expect(sseMetadata.requestId).toBe(requestId);
        const sseAnswer = { messages: sse.slice(0, -1).map(([, d]) => JSON.parse(d) as MessageObject), metadata: sseMetadata };
        expect(verifyStoreResponse(sseAnswer, nodeKey.address, { requestId, streamId: stream, partition: 0, queryType: "last", parameters: { count: "7000" } })).toBe(true);
      });

      test("a signed answer does not pass for another query, stream, partition or request id", async () => {
        // A relay asked `last 3` answers with the node's signed answer to `last 1` (a narrower query) under the client's id.
        const requestId = crypto.randomUUID();
        const narrower = (await getJson<ObjectAnswer>(stream, `0/last?count=1&verifyNetworkResponses=true&requestId=${requestId}`)).body;
        const asked = { requestId, streamId: stream, partition: 0, queryType: "last", parameters: { count: "3" } };
        expect(verifyStoreResponse(narrower, nodeKey.address, { ...asked, parameters: { count: "1" } })).toBe(true);
        expect(verifyStoreResponse(narrower, nodeKey.address, asked)).toBe(false);
        expect(verifyStoreResponse(narrower, nodeKey.address, { ...asked, parameters: {} })).toBe(true);
        expect(verifyStoreResponse(narrower, nodeKey.address, { ...asked, parameters: { count: "1" }, streamId: "other" })).toBe(false);
        expect(verifyStoreResponse(narrower, nodeKey.address, { ...asked, parameters: { count: "1" }, partition: 1 })).toBe(false);
        expect(verifyStoreResponse(narrower, nodeKey.address, { ...asked, parameters: { count: "1" }, requestId: crypto.randomUUID() })).toBe(false);
        const range = { requestId, streamId: stream, partition: 0, queryType: "range", parameters: { fromTimestamp: "0", toTimestamp: "99999" } };
        expect(verifyStoreResponse(narrower, nodeKey.address, range)).toBe(false);
      });
    });

    test("bad queries are 400 JSON before any byte of an answer, with the reference texts", async () => {
      const cases: [string, string][] = [
        ["x/last", 'Path parameter "partition" not a number: x'],
        ["0/last?count=ten", 'Query parameter "count" not a number: ten'],
        ["0/last?version=31", 'Query parameter "version" is not supported: 31'],
        ["0/last?format=xml", 'Query parameter "format" is invalid: xml'],
        ["0/newest", "Unknown query type: newest (expected one of last, from, range)"],
        ["0/from", 'Query parameter "fromTimestamp" required.'],
        ["0/range?fromTimestamp=1&toTimestamp=2&fromSequenceNumber=a", 'Query parameter "fromSequenceNumber" not a number: a'],
      ];
      for (const [rest, error] of cases) {
        for (const accept of ["application/json", "text/event-stream"]) {
          const response = await fetch(url("any", rest), { headers: { accept } });
          expect(response.status).toBe(400);
          expect(response.headers.get("content-type")).toStartWith("application/json");
          expect(await response.json()).toEqual({ error });
        }
      }
    });
  });
}

describe("storage failure", () => {
  test("is 500 {error: Failed to fetch data!} without details", async () => {
    const opened = await backends[0]!.open();
    const app = storeApp(opened, loadNodeKey(opened.dataDir));
    await opened.handle.close();
    const originalError = console.error;
    console.error = () => undefined;
    try {
      const response = await app.handle(new Request("http://localhost/stores/s/data/partitions/0/last"));
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: "Failed to fetch data!" });
    } finally {
      console.error = originalError;
      await opened.cleanup();
    }
  });
});
