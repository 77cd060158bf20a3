import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TCPSocketListener } from "bun";
import { type RunningProver, SOURCE_CLI, startProver } from "../support/prover.ts";
import { TARGET_HOST } from "../support/tls-fixture.ts";
import { rssBytes } from "./support.ts";

/**
 * Load on loopback, bounded in count and time. The one session slot (PROVER_MAX_SESSIONS=1) is held by a
 * request whose notary accepts the connection and never answers, so every other /proxy call meets a full
 * prover without any MPC work running, until PROVER_SESSION_TIMEOUT_MS ends it.
 */
const BURSTS = 24;
const PER_BURST = 200;
const TARGET_PORT = 443;

let silentNotary: TCPSocketListener;
let prover: RunningProver;

beforeAll(async () => {
  silentNotary = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  prover = await startProver(SOURCE_CLI, TARGET_PORT, {
    PROVER_NOTARY_URL: `http://127.0.0.1:${silentNotary.port}`,
    PROVER_MAX_SESSIONS: "1",
    PROVER_SESSION_TIMEOUT_MS: "6000",
    PROVER_POOL_SIZE: "0",
  });
}, 90_000);

afterAll(async () => {
  await prover?.stop();
  silentNotary?.stop(true);
});

const proxyCall = (body?: string) =>
  fetch(`${prover.url}/proxy`, {
    method: body ? "POST" : "GET",
    headers: { "t-proxy-url": `https://${TARGET_HOST}/data`, "t-request-id": crypto.randomUUID(), "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(20_000),
  });

describe("load", () => {
  test(`${BURSTS} bursts of ${PER_BURST} concurrent /proxy calls beyond capacity: all 503 with Retry-After, memory flat`, async () => {
    const holder = proxyCall();
    const payload = JSON.stringify({ pad: "p".repeat(64 * 1024) });
    const burst = async () => {
      const responses = await Promise.all(Array.from({ length: PER_BURST }, (_, i) => proxyCall(i % 2 ? payload : undefined)));
      const codes = await Promise.all(responses.map(async (r) => `${r.status} ${((await r.json()) as { error: { code: string } }).error.code}`));
      expect(new Set(codes)).toEqual(new Set(["503 over_capacity"]));
      expect(responses.every((r) => r.headers.get("retry-after") !== null)).toBe(true);
    };
    await burst(); // warm-up: allocators and JIT settle
    const started = Date.now();
    const before = rssBytes(prover.process.pid);
    const samples: number[] = [];
    for (let i = 1; i < BURSTS; i++) {
      await burst();
      samples.push(rssBytes(prover.process.pid));
    }
    const elapsed = Date.now() - started;
    const half = Math.floor(samples.length / 2);
    const firstHalfPeak = Math.max(...samples.slice(0, half));
    const secondHalfPeak = Math.max(...samples.slice(half));
    console.log(
      `load: ${(BURSTS - 1) * PER_BURST} refused calls in ${elapsed} ms (${Math.round(((BURSTS - 1) * PER_BURST * 1000) / elapsed)}/s); ` +
        `RSS ${Math.round(before / 2 ** 20)} MiB -> ${samples.map((s) => Math.round(s / 2 ** 20)).join(", ")} MiB`,
    );
    // The heap breathes with garbage collection (swings of 30-40 MiB), but must level off: 6.4 MiB of bodies
    // arrive per burst, so keeping what refused calls carried would add over 70 MiB between the halves' peaks.
    expect(secondHalfPeak - firstHalfPeak).toBeLessThan(40 * 2 ** 20);
    expect(secondHalfPeak - before).toBeLessThan(128 * 2 ** 20);
    // PROVER_SESSION_TIMEOUT_MS ends the held session (the notary client would wait 10 s), and frees the slot.
    const held = await holder;
    expect(held.status).toBe(504);
    expect(((await held.json()) as { error: { code: string } }).error.code).toBe("session_timeout");
    const after = await proxyCall();
    expect(((await after.json()) as { error: { code: string } }).error.code).not.toBe("over_capacity");
  }, 60_000);

  test("the message store under concurrent writers and readers loses nothing", async () => {
    const WRITERS = 8;
    const EACH = 40;
    const stream = `load-${crypto.randomUUID()}`;
    const base = `${prover.url}/stores/${encodeURIComponent(stream)}/data/partitions/0`;
    let writing = true;
    const seenCounts: number[] = [];
    const writer = async (w: number) => {
      for (let i = 0; i < EACH; i++) {
        const response = await fetch(base, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ content: { w, i } }),
        });
        expect(response.status).toBe(200);
      }
    };
    const reader = async () => {
      let reads = 0;
      let previous = 0;
      while (writing && reads < 500) {
        reads += 1;
        const response = await fetch(`${base}/last?count=5000`);
        expect(response.status).toBe(200);
        const body = (await response.json()) as { messages: unknown[] };
        // A stored message never disappears from a later read.
        expect(body.messages.length).toBeGreaterThanOrEqual(previous);
        previous = body.messages.length;
        seenCounts.push(previous);
      }
    };
    const readers = Array.from({ length: 4 }, reader);
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    writing = false;
    await Promise.all(readers);

    const all = (await (await fetch(`${base}/from?fromTimestamp=0`)).json()) as { messages: { content: { w: number; i: number } }[] };
    const keys = new Set(all.messages.map((m) => `${m.content.w}/${m.content.i}`));
    expect(all.messages).toHaveLength(WRITERS * EACH);
    expect(keys.size).toBe(WRITERS * EACH);
    expect(seenCounts.length).toBeGreaterThan(0);
    expect(Math.max(...seenCounts)).toBeLessThanOrEqual(WRITERS * EACH);
  }, 60_000);
});
