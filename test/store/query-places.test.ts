import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { type Socket, connect } from "node:net";
import type { ProverServer } from "../../src/app/prover.ts";
import { queryPlaces } from "../../src/store/query-places.ts";
import { appErrorOf } from "../../testkit/app-error.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { startProverInProcess } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { eventually } from "../../testkit/wait.ts";

/** The over_capacity refusal's message, or undefined when a place was given. */
function refusedWith(take: () => unknown): string | undefined {
  const refused = appErrorOf(take);
  if (refused) expect(refused.code).toBe("over_capacity");
  return refused?.message;
}

describe("store answer places", () => {
  test("plain and streamed answers have places of their own; a place given back is free again, once", () => {
    const take = queryPlaces({ pages: 2, streams: 1, perClient: 10 });
    const held = [take("page", "a"), take("page", "b"), take("stream", "c")];
    expect(refusedWith(() => take("page", "d"))).toBe("the store is answering its maximum of 2 queries");
    expect(refusedWith(() => take("stream", "d"))).toBe("the store is streaming its maximum of 1 answers");
    held[0]!();
    held[0]!();
    expect(refusedWith(() => take("page", "d"))).toBeUndefined();
    expect(refusedWith(() => take("page", "e"))).toBe("the store is answering its maximum of 2 queries");
  });

  test("one client holds at most perClient answers of either kind; others still get theirs", () => {
    const take = queryPlaces({ pages: 10, streams: 10, perClient: 2 });
    const first = take("page", "greedy");
    take("stream", "greedy");
    expect(refusedWith(() => take("page", "greedy"))).toBe("this client holds its maximum of 2 store answers at once");
    expect(refusedWith(() => take("stream", "other"))).toBeUndefined();
    first();
    expect(refusedWith(() => take("page", "greedy"))).toBeUndefined();
  });
});

describe("store answer places through the composed prover", () => {
  let target: Server<undefined>;
  let server: ProverServer;
  const held: Socket[] = [];
  beforeAll(async () => {
    target = startTarget(tlsFixture());
    ({ server } = await startProverInProcess(target.port!, { PROVER_STORE_PER_CLIENT: "2", PROVER_STORE_STREAMS: "8" }));
    // 16 MB in the stream: an SSE answer of it cannot finish into a socket nobody reads, so it keeps its place.
    for (let i = 0; i < 16; i++) {
      const published = await fetch(`${server.url}/stores/places/data/partitions/0`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ content: "x".repeat(1_000_000) }) });
      expect(published.status).toBe(200);
    }
  }, 120_000);
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await server?.stop();
    target?.stop(true);
  }, 60_000);

  /** An SSE store answer read to its status line, then never read again: it holds its place. */
  const stalledReader = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const { hostname, port } = new URL(server.url);
      const socket = connect(Number(port), hostname, () =>
        socket.write(`GET /stores/places/data/partitions/0/last?count=100 HTTP/1.1\r\nHost: ${hostname}\r\nAccept: text/event-stream\r\n\r\n`),
      );
      held.push(socket);
      socket.once("data", (chunk: Buffer) => {
        socket.pause();
        resolve(chunk.toString("latin1").split("\r\n", 1)[0] ?? "");
      });
      socket.on("error", reject);
    });

  test("one client (its address, keys off) holds at most PROVER_STORE_PER_CLIENT answers: the next is 503 with Retry-After", async () => {
    expect(await stalledReader()).toBe("HTTP/1.1 200 OK");
    expect(await stalledReader()).toBe("HTTP/1.1 200 OK");
    const refused = await fetch(`${server.url}/stores/places/data/partitions/0/last?count=1`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).not.toBeNull();
    expect(await refused.json()).toEqual({ error: "this client holds its maximum of 2 store answers at once" });
    // A reader gone gives its place back.
    held.shift()!.destroy();
    expect(await eventually(async () => (await fetch(`${server.url}/stores/places/data/partitions/0/last?count=1`)).status, (status) => status === 200, 10_000)).toBe(200);
  }, 60_000);
});
