import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { eventually, proxyHeaders, waitForLog } from "../../testkit/notary.ts";

/**
 * Access and abuse limits of a real `cli prover start` process. Every request here fails or is answered
 * before an MPC session starts, so the file needs no session at all.
 */
const KEY = "key-alpha-7c1f0e9d2b";
const OTHER_KEY = "key-beta-55aa33cc11";
const WRONG_KEY = "wrong-key-0d9e8f7a6b";
const HEADER_SECRET = "hdr-secret-9f8e7d6c";
const BODY_SECRET = "body-secret-1a2b3c4d";

let target: Server<undefined>;
let prover: RunningProver;
let dataUrl: string;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  target = startTarget(tlsFixture());
  dataUrl = `https://${TARGET_HOST}:${target.port}/data`;
  prover = await startProver(SOURCE_CLI, target.port!, {
    PROVER_API_KEYS: `${KEY}, ${OTHER_KEY}`,
    PROVER_ALLOW_PRIVATE_TARGETS: "0",
    PROVER_MAX_BODY_BYTES: "1024",
    PROVER_SSE_PER_REQUEST: "2",
    PROVER_SSE_TOTAL: "3",
    PROVER_POOL_SIZE: "0",
    LOG_FORMAT: "json",
  });
}, 90_000);

afterAll(async () => {
  expect(await prover?.stop()).toBe(0);
  target?.stop(true);
}, 120_000);

async function errorOf(response: Response): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: body.error.code, message: body.error.message };
}

/** Opens an SSE stream and keeps it open until aborted. */
async function openStream(requestId: string): Promise<{ response: Response; close(): void }> {
  const abort = new AbortController();
  const response = await fetch(`${prover.url}/proof/${requestId}`, { headers: bearer(KEY), signal: abort.signal });
  return { response, close: () => abort.abort() };
}

describe("API keys", () => {
  test("/proxy: 401 without a key, 403 with a wrong one, through with a listed one", async () => {
    const missing = await fetch(`${prover.url}/proxy`, { headers: proxyHeaders(dataUrl) });
    expect(missing.headers.get("www-authenticate")).toBe("Bearer");
    expect(await errorOf(missing)).toMatchObject({ status: 401, code: "unauthorized" });
    for (const headers of [bearer(WRONG_KEY), { authorization: KEY }, { authorization: "Bearer " }, bearer(`${KEY}x`)]) {
      expect(await errorOf(await fetch(`${prover.url}/proxy`, { headers: { ...proxyHeaders(dataUrl), ...headers } }))).toMatchObject({
        status: 403,
        code: "forbidden",
      });
    }
    // Both keys pass; the loopback target is then refused by the address policy, not by auth.
    for (const key of [KEY, OTHER_KEY]) {
      const through = await fetch(`${prover.url}/proxy`, { headers: { ...proxyHeaders(dataUrl), ...bearer(key) } });
      expect(await errorOf(through)).toMatchObject({ status: 403, code: "target_forbidden" });
    }
  });

  test("/proof, publishing and /pool need a key; reads of the store, /info and /healthcheck do not", async () => {
    const id = crypto.randomUUID();
    expect((await fetch(`${prover.url}/proof/${id}`)).status).toBe(401);
    expect((await fetch(`${prover.url}/proof/${id}`, { headers: bearer(WRONG_KEY) })).status).toBe(403);
    const publish = (headers: Record<string, string>) =>
      fetch(`${prover.url}/stores/hardening/data/partitions/0`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ content: { n: 1 } }),
      });
    expect((await publish({})).status).toBe(401);
    expect((await publish(bearer(WRONG_KEY))).status).toBe(403);
    expect((await publish(bearer(KEY))).status).toBe(200);
    expect((await fetch(`${prover.url}/stores/hardening/data/partitions/0/last`)).status).toBe(200);
    expect((await fetch(`${prover.url}/pool`)).status).toBe(401);
    expect((await fetch(`${prover.url}/pool`, { headers: bearer(KEY) })).status).toBe(200);
    expect((await fetch(`${prover.url}/healthcheck`)).status).toBe(200);
    expect((await fetch(`${prover.url}/info`)).status).toBe(200);
  });
});

describe("SSRF", () => {
  test.each([
    ["the test host, mapped to 127.0.0.1", () => dataUrl],
    ["a decimal IPv4 literal", () => `https://2130706433:${target.port}/data`],
    ["an octal IPv4 literal", () => `https://0177.0.0.1:${target.port}/data`],
    ["an IPv4-mapped IPv6 literal", () => `https://[::ffff:7f00:1]:${target.port}/data`],
    ["localhost", () => `https://localhost:${target.port}/data`],
    ["the cloud metadata address", () => "https://169.254.169.254/latest/meta-data/"],
    ["the unspecified address", () => `https://0.0.0.0:${target.port}/`],
  ])("a loopback or internal target is refused with 403 without PROVER_ALLOW_PRIVATE_TARGETS: %s", async (_, url) => {
    const response = await fetch(`${prover.url}/proxy`, { headers: { ...proxyHeaders(url()), ...bearer(KEY) } });
    expect(await errorOf(response)).toMatchObject({ status: 403, code: "target_forbidden" });
  });

  test("only https targets", async () => {
    const response = await fetch(`${prover.url}/proxy`, { headers: { ...proxyHeaders("http://example.com/"), ...bearer(KEY) } });
    expect(await errorOf(response)).toMatchObject({ status: 400, code: "invalid_header" });
  });
});

describe("limits", () => {
  test("a body over PROVER_MAX_BODY_BYTES is 413, declared or streamed", async () => {
    const headers = { ...proxyHeaders(dataUrl), ...bearer(KEY), "content-type": "application/json" };
    const big = JSON.stringify({ pad: "x".repeat(2000) });
    const declared = await fetch(`${prover.url}/proxy`, { method: "POST", headers, body: big });
    expect(await errorOf(declared)).toMatchObject({ status: 413, code: "payload_too_large" });
    const chunks = [new TextEncoder().encode(big.slice(0, 900)), new TextEncoder().encode(big.slice(900))];
    const streamed = await fetch(`${prover.url}/proxy`, {
      method: "POST",
      headers: { ...proxyHeaders(dataUrl), ...bearer(KEY) },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      }),
    });
    expect(await errorOf(streamed)).toMatchObject({ status: 413, code: "payload_too_large" });
  });

  test("SSE subscribers are capped per request id and in total (PROVER_SSE_PER_REQUEST=2, PROVER_SSE_TOTAL=3)", async () => {
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    const open = [await openStream(a), await openStream(a)];
    expect(open.map((s) => s.response.status)).toEqual([200, 200]);
    const thirdOnA = await fetch(`${prover.url}/proof/${a}`, { headers: bearer(KEY) });
    expect(thirdOnA.headers.get("retry-after")).not.toBeNull();
    expect(await errorOf(thirdOnA)).toMatchObject({ status: 503, code: "over_capacity" });
    open.push(await openStream(b));
    expect(open[2]!.response.status).toBe(200);
    expect(await errorOf(await fetch(`${prover.url}/proof/${crypto.randomUUID()}`, { headers: bearer(KEY) }))).toMatchObject({
      status: 503,
      code: "over_capacity",
    });
    for (const stream of open) stream.close();
  });

  test("dropped SSE connections give their places back (bounded: 10 rounds of 3)", async () => {
    for (let round = 0; round < 10; round++) {
      const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      // The server notices a dropped stream on its next write or close: until then a place may still be taken.
      const allOpened = async () => {
        const opened = await Promise.all(ids.map(openStream));
        if (!opened.every((s) => s.response.status === 200)) for (const s of opened) s.close();
        return opened;
      };
      const streams = await eventually(allOpened, (opened) => opened.every((s) => s.response.status === 200), 20_000);
      expect(streams.map((s) => s.response.status)).toEqual([200, 200, 200]);
      // Read the first comment so that the server has really started each stream, then drop it.
      await Promise.all(streams.map((s) => s.response.body!.getReader().read()));
      for (const s of streams) s.close();
    }
  });
});

describe("logs", () => {
  test("are JSON lines with the request id, and hold no API key, redacted value or private key", async () => {
    const requestId = crypto.randomUUID();
    const withSecrets = {
      ...proxyHeaders(dataUrl, {
        "t-request-id": requestId,
        // Proxy mode, the body hidden whole: a request it could prove, refused for its target (a private address).
        "t-proof-mode": "proxy",
        "t-redacted": `req:header:x-api-secret, req:body:, search:${BODY_SECRET}`,
        "x-api-secret": HEADER_SECRET,
      }),
      ...bearer(KEY),
      "content-type": "application/json",
    };
    const refused = await fetch(`${prover.url}/proxy`, { method: "POST", headers: withSecrets, body: JSON.stringify({ secret: BODY_SECRET }) });
    expect(refused.status).toBe(403);
    // A wrong key and a malformed pattern that contains a secret are logged without either.
    await fetch(`${prover.url}/proxy`, { headers: { ...proxyHeaders(dataUrl), ...bearer(WRONG_KEY) } });
    const badPattern = await fetch(`${prover.url}/proxy`, {
      headers: { ...proxyHeaders(dataUrl, { "t-redacted": `nope:${BODY_SECRET}` }), ...bearer(KEY) },
    });
    const patternError = await errorOf(badPattern);
    expect(patternError).toMatchObject({ status: 400, code: "invalid_redaction" });
    expect(patternError.message).not.toContain(BODY_SECRET);

    // The log is a pipe read as it comes: a last refused call's line, once seen, comes after every line above.
    const marker = crypto.randomUUID();
    await fetch(`${prover.url}/proxy`, { headers: { ...proxyHeaders(dataUrl, { "t-request-id": marker }), ...bearer(KEY) } });
    await waitForLog(prover.process, prover.log, new RegExp(`"requestId":"${marker}"`), 10_000);
    const log = prover.log();
    const lines = log.split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const refusal = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.requestId === requestId);
    expect(refusal).toMatchObject({ level: "warn", code: "target_forbidden" });
    const privateKeyPem = readFileSync(join(prover.dataDir, "notary.key"), "utf8");
    const privateKeyBody = privateKeyPem.split("\n").filter((l) => l && !l.startsWith("-----")).join("");
    for (const secret of [KEY, OTHER_KEY, WRONG_KEY, HEADER_SECRET, BODY_SECRET, privateKeyBody]) {
      expect(log).not.toContain(secret);
    }
  });
});
