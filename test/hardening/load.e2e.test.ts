import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { rssBytes } from "../../testkit/process.ts";
import { eventually } from "../../testkit/notary.ts";
import { startTarget } from "../../testkit/target.ts";

/**
 * Load on loopback, bounded in count, not in time. The one session slot (PROVER_MAX_SESSIONS=1) is held by a
 * request whose notary keeps its session request waiting, so every other /proxy call meets a full prover
 * without any MPC work running, until the test lets the notary answer. The target listens (the prover's pre-check
 * refuses a closed port before any session) and is never asked for more than a handshake.
 */
const BURSTS = 24;
const PER_BURST = 200;

/**
 * A stand-in notary (the holder's peer, not what is tested): `/info` answers, and each `POST /session` waits
 * until the test answers it (refusing that session). The prover's notary client gives up after 10 s, so a
 * hold is released by the test well within that.
 */
function holdingNotary(publicKey: string) {
  const waiting: ((response: Response) => void)[] = [];
  let asked = 0;
  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/info") return Response.json({ version: "0.0.0", publicKey, signatureAlgorithm: "secp256k1", testTrustAnchor: true });
      if (pathname === "/session" && request.method === "POST") {
        asked += 1;
        return new Promise<Response>((answer) => waiting.push(answer));
      }
      return new Response("not found", { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    /** Session requests waiting now: one per /proxy call holding a slot. */
    waiting: () => waiting.length,
    /** Session requests received since start. */
    asked: () => asked,
    releaseAll: () => {
      // A refusal of this one session (400), not a notary fault: the prover keeps using this notary.
      for (const answer of waiting.splice(0)) answer(Response.json({ error: { code: "session_refused", message: "released by the test" } }, { status: 400 }));
    },
    stop: () => server.stop(true),
  };
}

let notary: ReturnType<typeof holdingNotary>;
let prover: RunningProver;
let target: Server<undefined>;

beforeAll(async () => {
  const keys = scratchDir("load-notary");
  expect((await runCli(SOURCE_CLI, ["notary", "keygen", "--out", keys])).exitCode).toBe(0);
  notary = holdingNotary(readFileSync(join(keys, "notary.pub"), "utf8"));
  target = startTarget(tlsFixture());
  prover = await proverOnHoldingNotary({ PROVER_MAX_SESSIONS: "1" });
}, 90_000);

/** A prover whose sessions all ask the holding notary: no warm pool, so each /proxy call asks it once. */
const proverOnHoldingNotary = (env: Record<string, string>) =>
  startProver(SOURCE_CLI, target.port!, { PROVER_NOTARY_URL: notary.url, PROVER_POOL_SIZE: "0", ...env });

afterAll(async () => {
  notary?.releaseAll();
  await prover?.stop();
  notary?.stop();
  target?.stop(true);
}, 120_000);

const proxyCall = (base: string, body?: string) =>
  fetch(`${base}/proxy`, {
    method: body ? "POST" : "GET",
    headers: { "t-proxy-url": `https://${TARGET_HOST}:${target.port}/data`, "t-request-id": crypto.randomUUID(), "content-type": "application/json" },
    body,
  });
const codeOf = async (response: Response) => `${response.status} ${((await response.json()) as { error: { code: string } }).error.code}`;

/**
 * Starts a /proxy call and resolves once it holds the slot (its session request reached the notary). The slot
 * of a call that just ended is given back a moment after its answer, so a call refused meanwhile is retried.
 */
async function holdSlot(base: string): Promise<{ call: Promise<Response> }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const before = notary.waiting();
    const call = proxyCall(base);
    // Only the status is read here: the body stays for whoever awaits the call.
    const refused = call.then((response) => response.status);
    const holding = eventually(notary.waiting, (n) => n === before + 1 || Date.now() > deadline, 60_000).then((n) => n === before + 1);
    const first = await Promise.race([holding, refused]);
    if (first === true) return { call };
    expect(first).toBe(503);
    expect(Date.now()).toBeLessThan(deadline);
  }
}

describe("load", () => {
  test(`${BURSTS} bursts of ${PER_BURST} concurrent /proxy calls beyond capacity: all 503 with Retry-After, memory levels off`, async () => {
    const payload = JSON.stringify({ pad: "p".repeat(64 * 1024) });
    // Each burst meets a slot held by its own request, released after the burst: no burst races a deadline.
    const burst = async () => {
      const { call: holder } = await holdSlot(prover.url);
      try {
        const responses = await Promise.all(Array.from({ length: PER_BURST }, (_, i) => proxyCall(prover.url, i % 2 ? payload : undefined)));
        expect(new Set(await Promise.all(responses.map(codeOf)))).toEqual(new Set(["503 over_capacity"]));
        expect(responses.every((r) => r.headers.get("retry-after") !== null)).toBe(true);
      } finally {
        notary.releaseAll();
      }
      // The held session ends when the notary refuses it.
      expect(await codeOf(await holder)).toBe("500 session_failed");
    };
    await burst(); // warm-up: allocators and JIT settle
    const started = Date.now();
    const before = rssBytes(prover.process.pid);
    const samples: number[] = [];
    for (let i = 1; i < BURSTS; i++) {
      await burst();
      samples.push(rssBytes(prover.process.pid));
    }
    console.log(
      `load: ${(BURSTS - 1) * PER_BURST} refused calls in ${Date.now() - started} ms; ` +
        `RSS ${Math.round(before / 2 ** 20)} MiB -> ${samples.map((s) => Math.round(s / 2 ** 20)).join(", ")} MiB`,
    );
    // 6.4 MiB of bodies arrive per burst: keeping what refused calls carried would raise the resident floor by
    // over 70 MiB between the halves. Floors (the lowest sample of each half) follow what survives garbage
    // collection; peaks swing 30-40 MiB with its timing, more so on a busy machine.
    const half = Math.floor(samples.length / 2);
    const firstFloor = Math.min(...samples.slice(0, half));
    const secondFloor = Math.min(...samples.slice(half));
    expect(secondFloor - firstFloor).toBeLessThan(35 * 2 ** 20);
    expect(secondFloor - before).toBeLessThan(64 * 2 ** 20);
  }, 600_000);

  test("PROVER_SESSION_TIMEOUT ends a held session and frees its slot for the next call", async () => {
    const short = await proverOnHoldingNotary({ PROVER_MAX_SESSIONS: "1", PROVER_SESSION_TIMEOUT: "3000ms" });
    try {
      const { call: held } = await holdSlot(short.url);
      // Left waiting: the deadline, not the notary client's 10 s, ends it.
      expect(await codeOf(await held)).toBe("504 session_timeout");
      // The next call gets the slot: its session request reaches the notary.
      const { call: next } = await holdSlot(short.url);
      notary.releaseAll();
      expect(await codeOf(await next)).not.toBe("503 over_capacity");
    } finally {
      notary.releaseAll();
      await short.stop();
    }
  }, 120_000);

  test("calls without a warm session set up one at a time, in arrival order; waiting counts against the session deadline", async () => {
    const queued = await proverOnHoldingNotary({ PROVER_MAX_SESSIONS: "3", PROVER_CONCURRENT_SETUPS: "1", PROVER_SESSION_TIMEOUT: "6000ms" });
    const setups = async () => ((await (await fetch(`${queued.url}/pool`)).json()) as { setups: { running: number; waiting: number } }).setups;
    try {
      const { call: first } = await holdSlot(queued.url);
      const asked = notary.asked();
      const second = proxyCall(queued.url);
      const third = proxyCall(queued.url);
      expect(await eventually(setups, (s) => s.waiting === 2, 10_000)).toEqual({ running: 1, waiting: 2 });
      // Both wait their turn: only the first call's session request reached the notary.
      expect(notary.asked()).toBe(asked);
      notary.releaseAll();
      expect(await codeOf(await first)).toBe("500 session_failed");
      // The next in line asks at once; the third still waits, until the deadline both calls share passes.
      expect(await eventually(notary.asked, (n) => n === asked + 1, 10_000)).toBe(asked + 1);
      expect(await setups()).toEqual({ running: 1, waiting: 1 });
      expect(await codeOf(await second)).toBe("504 session_timeout");
      expect(await codeOf(await third)).toBe("504 session_timeout");
      // Abandoned calls give their turn up at once, though the notary still holds a session request.
      expect(await setups()).toEqual({ running: 0, waiting: 0 });
    } finally {
      notary.releaseAll();
      await queued.stop();
    }
  }, 120_000);

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
  }, 300_000);
});
