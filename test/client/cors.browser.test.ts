/**
 * The client library in a real headless Chromium, on a page of another origin than the prover's: a real
 * `cli prover start` (embedded notary, one real proxy-mode session, the local TLS target's /echo) that lists one origin
 * in PROVER_CORS_ORIGINS. The page on that origin gets its answer and a real proof; a page on an origin not
 * listed is blocked by the browser. The same session shows what a browser adds about its user (Origin, Referer,
 * Sec-Fetch-*, and what the page sets) reaching neither the target nor the proof, and the proof saying that the
 * prover's embedded notary signed it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { BrowserContext, Page } from "playwright-core";
import { verifyProof } from "../../src/client/index.ts";
import { buildClientBundle } from "../../scripts/build-client.ts";
import { launchChromium } from "../../testkit/chromium.ts";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { verifyWithCli } from "../../testkit/prove.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

const PROOF_MS = 60_000;
/**
 * Headers that name the user, as a page (or a proxy or CDN before the prover) may set them; the browser adds
 * Origin, Referer and Sec-Fetch-* itself. Only x-app-version is the client's own.
 */
const IDENTIFYING = {
  "x-forwarded-for": "198.51.100.23",
  "x-real-ip": "198.51.100.23",
  forwarded: "for=198.51.100.23;proto=https",
  "cf-connecting-ip": "198.51.100.23",
  "true-client-ip": "198.51.100.23",
  "x-client-ip": "198.51.100.23",
};
const PAGE_HEADERS = { ...IDENTIFYING, "x-app-version": "7" };

let target: Server<undefined>;
let pages: Server<undefined>;
let prover: RunningProver;
let browser: BrowserContext;
/** The listed origin (127.0.0.1) and one that is not (localhost): the same page server, two origins. */
let listedOrigin: string;
let otherOrigin: string;

/** What `prove()` gave the page, as plain data. */
type PageResult = { ok: true; status: number; body: string; proofText: string } | { ok: false; code: string; message: string };

async function proveFrom(origin: string): Promise<PageResult> {
  const page: Page = await browser.newPage();
  try {
    await page.goto(`${origin}/`);
    await page.waitForFunction(() => "tlsproof" in globalThis);
    return await page.evaluate(
      async ({ prover, url, headers, timeoutMs, notaryKeys }) => {
        const client = (globalThis as unknown as { tlsproof: typeof import("../../src/client/index.ts") }).tlsproof;
        try {
          const result = await client.prove({ prover, url, headers, timeoutMs, notaryKeys, retries: 0, allowTestTrustAnchor: true });
          return { ok: true as const, status: result.response.status, body: result.response.text(), proofText: result.proofText };
        } catch (error) {
          const failure = error as { code?: string; message?: string };
          return { ok: false as const, code: String(failure.code), message: String(failure.message) };
        }
      },
      { prover: prover.url, url: `https://${TARGET_HOST}:${target.port}/echo`, headers: PAGE_HEADERS, timeoutMs: PROOF_MS, notaryKeys: [prover.notaryPubPem] },
    );
  } finally {
    await page.close();
  }
}

beforeAll(async () => {
  const bundle = await Bun.file(await buildClientBundle(scratchDir("client-bundle"))).text();
  pages = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname === "/client.js") return new Response(bundle, { headers: { "content-type": "text/javascript" } });
      const html = `<!doctype html><script type="module">import * as tlsproof from "/client.js"; window.tlsproof = tlsproof;</script>`;
      return new Response(html, { headers: { "content-type": "text/html" } });
    },
  });
  listedOrigin = `http://127.0.0.1:${pages.port}`;
  otherOrigin = `http://localhost:${pages.port}`;
  target = startTarget(tlsFixture());
  // CORS is the prover's HTTP, the same in every mode: proxy mode's proofs are quick.
  prover = await startProver(SOURCE_CLI, target.port!, { PROVER_CORS_ORIGINS: listedOrigin, PROVER_PROOF_MODE: "proxy" });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await prover?.stop();
  target?.stop(true);
  pages?.stop(true);
}, 120_000);

describe("a page on another origin", () => {
  let listed: PageResult;

  beforeAll(async () => {
    listed = await proveFrom(listedOrigin);
  }, PROOF_MS);

  test("listed in PROVER_CORS_ORIGINS: prove() gets the answer and a real proof", () => {
    if (!listed.ok) throw new Error(`prove() failed on the listed origin: ${listed.code} ${listed.message}`);
    expect(listed.status).toBe(200);
    const verified = verifyProof(listed.proofText, [prover.notaryPubPem], { allowTestTrustAnchor: true });
    expect(verified.body.serverName).toBe(TARGET_HOST);
    expect(verified.recv.text).toContain('"path":"/echo"');
  });

  test("what the browser and the page add about the user reaches neither the target nor the proof", () => {
    if (!listed.ok) throw new Error("no proof");
    const echoed = (JSON.parse(listed.body) as { headers: Record<string, string> }).headers;
    expect(echoed["x-app-version"]).toBe("7");
    for (const name of ["origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-ch-ua", ...Object.keys(IDENTIFYING)]) {
      expect(echoed[name]).toBeUndefined();
    }
    const sent = verifyProof(listed.proofText, [prover.notaryPubPem], { allowTestTrustAnchor: true }).sent.text;
    expect(sent).toContain("x-app-version: 7");
    expect(sent).not.toContain("198.51.100.23");
    expect(sent).not.toContain("127.0.0.1");
  });

  test("the proof says the prover's embedded notary signed it, and cli verify shows it", async () => {
    if (!listed.ok) throw new Error("no proof");
    expect(verifyProof(listed.proofText, [prover.notaryPubPem], { allowTestTrustAnchor: true }).body.notary.embedded).toBe(true);
    const cli = await verifyWithCli(listed.proofText, prover.notaryPubPath);
    expect(cli.exitCode).toBe(0);
    expect((JSON.parse(cli.stdout) as { notary: { embedded: boolean | null } }).notary.embedded).toBe(true);
  });

  test("not listed: the browser blocks the call", async () => {
    const other = await proveFrom(otherOrigin);
    expect(other).toMatchObject({ ok: false, code: "network_error" });
    // The prover answers the other origin's preflight with a refusal and no CORS headers.
    const preflight = await fetch(`${prover.url}/proxy`, {
      method: "OPTIONS",
      headers: { origin: otherOrigin, "access-control-request-method": "GET", "access-control-request-headers": "t-proxy-url, t-request-id" },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });
});
