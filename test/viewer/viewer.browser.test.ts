import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import type { BrowserContext, Page } from "playwright-core";
import { type ProveResult, prove, redact } from "../../src/client/index.ts";
import { TEST_TRUST_ANCHOR_WARNING } from "../../src/proof/render.ts";
import { launchChromium } from "../../testkit/chromium.ts";
import { decodePublicKeyPem, generateKey, publicKeyFingerprint } from "../../src/proof/keys.ts";
import { quorumProofOf } from "../../src/proof/quorum.ts";
import { signProof } from "../../src/proof/sign.ts";
import { directionHiding, hiddenRequestBody, sampleBody } from "../proof/fixtures.ts";
import { HIDDEN_REQUEST_LIMIT } from "../../src/proof/verify.ts";
import { TMP_ROOT, scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { SECRET_VALUE, startTarget } from "../../testkit/target.ts";
import { withEvmAttestationChanged, withTranscriptByteChanged } from "../../testkit/tamper.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * The proof viewer page in a real headless Chromium (Debian's, installed by .ci/debian-packages), served by a
 * real `cli prover start`, showing a proof from one real proxy-mode session (the page reads every mode's proofs
 * alike: a proof's mode is one of its signed fields).
 */
const PROOF_MS = 60_000;
/** Where the test run leaves its screenshot (docs/viewer.png is a copy of one). */
const SCREENSHOT = join(TMP_ROOT, "viewer.png");
const SCREENSHOT_BY_ID = join(TMP_ROOT, "viewer-by-request-id.png");

let target: Server<undefined>;
let prover: RunningProver;
let result: ProveResult;
let browser: BrowserContext;
let page: Page;

beforeAll(async () => {
  target = startTarget(tlsFixture());
  // An id nobody uses is given up after 2 s: the page's wait for it ends soon.
  prover = await startProver(SOURCE_CLI, target.port!, { PROVER_UNKNOWN_REQUEST_TIMEOUT: "2s" });
  result = await prove({
    prover: prover.url,
    notaryKeys: prover.notaryPubPem,
    allowTestTrustAnchor: true,
    url: `https://${TARGET_HOST}:${target.port}/data`,
    redact: [redact.responseBody("secret")],
    mode: "proxy",
    timeoutMs: PROOF_MS,
  });
  browser = await launchChromium();
  page = browser.pages()[0] ?? (await browser.newPage());
}, PROOF_MS);

afterAll(async () => {
  await browser?.close();
  await prover?.stop();
  target?.stop(true);
}, 120_000);

/** The page's getComputedStyle, as the tests read it (the test files are typed without the DOM library). */
type ComputedStyles = { getComputedStyle(node: unknown): { backgroundColor: string; unicodeBidi: string; direction: string } };

async function show(proofText: string, keyPem?: string): Promise<void> {
  await page.fill("#proof", proofText);
  if (keyPem === undefined) await page.click("#prover-key");
  else await page.fill("#key", keyPem);
}

describe("the proof viewer", () => {
  test("a real proof with this prover's keys (from /info) shows valid, its facts and hidden bytes marked", async () => {
    // The proof was made under the test CA: accepted on purpose, as the page's address may ask.
    await page.goto(`${prover.url}/viewer?allowTestAnchor=1`);
    await show(result.proofText);
    await page.waitForSelector("#status.test-anchor");
    const status = await page.textContent("#status");
    expect(status).toContain(`Valid only under a TEST trust anchor (not the public web PKI): proof from ${TARGET_HOST}`);
    // Genuine, but nothing was given to tie it to the reader's request: the page says what that leaves open.
    expect(status).toContain("No request id, host, URL or method given: this shows the proof is genuine, not that it is about your request.");
    expect(await page.inputValue("#key")).toBe(prover.notaryPubPem);
    const report = (await page.textContent("#report")) ?? "";
    expect(report).toContain(TEST_TRUST_ANCHOR_WARNING);
    expect(report).toContain(result.requestId);
    expect(report).toContain(new Date(result.proof.body.notarizedAt).toISOString());
    expect(report).toMatch(/Notary key\s*sha256:[0-9a-f]{64}/);
    // The proof came from this prover's embedded notary, and the page says so.
    expect(report).toMatch(/Notary\s*embedded in the prover/);
    expect(report).toMatch(/EVM attestation\s*valid, signed by 0x[0-9a-f]{40}/);
    expect(report).toContain("GET /data HTTP/1.1");
    expect(report).toMatch(new RegExp(`Request\\s*revealed: GET /data HTTP/1\\.1 \\(Host: ${TARGET_HOST}:${target.port}\\)`));
    expect(report).toContain('"user":{"id":1000,"name":"alice"}');
    expect(report).not.toContain(SECRET_VALUE);
    // The secret and its quotes: one marked run of hidden bytes, their count in the element.
    const hidden = await page.$$eval("mark.hidden", (marks) => marks.map((mark) => ({ bytes: mark.getAttribute("data-hidden-bytes"), text: mark.textContent })));
    expect(hidden).toContainEqual({ bytes: String(SECRET_VALUE.length + 2), text: "█".repeat(SECRET_VALUE.length + 2) });
    expect(await page.textContent("#redactions")).toContain("Redactions (declared by the prover)");
    expect(await page.textContent("#redactions")).toContain("res:body:secret");
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  test.each([
    ["its server name", (text: string) => text.replace('"serverName":"', '"serverName":"evil.')],
    ["one byte of its transcript", withTranscriptByteChanged],
    ["its EVM attestation", withEvmAttestationChanged],
  ])("a proof with %s changed shows invalid with the reason, and no report", async (_, tamper) => {
    await page.goto(`${prover.url}/viewer`);
    const tampered = tamper(result.proofText);
    expect(tampered).not.toBe(result.proofText);
    await show(tampered, prover.notaryPubPem);
    await page.waitForSelector("#status.invalid");
    expect(await page.textContent("#status")).toContain("signature does not match");
    expect(await page.textContent("#report")).toBe("");
  });

  test("with the request id and host the reader sent (from the page's address) it says they match; another request's id or host shows it is not that proof", async () => {
    await page.goto(`${prover.url}/viewer?requestId=${result.requestId.toUpperCase()}&serverName=${TARGET_HOST}&allowTestAnchor=1`);
    expect(await page.inputValue("#request-id")).toBe(result.requestId.toUpperCase());
    expect(await page.inputValue("#server-name")).toBe(TARGET_HOST);
    await show(result.proofText, prover.notaryPubPem);
    await page.waitForSelector("#status.test-anchor");
    expect(await page.textContent("#status")).toContain("Its request id and host are the ones you gave.");

    const otherId = crypto.randomUUID();
    await page.fill("#request-id", otherId);
    expect(await page.getAttribute("#status", "class")).toBe("invalid");
    expect(await page.textContent("#status")).toBe(`Not the proof you asked for: the proof is of request id ${result.requestId}, expected ${otherId}`);
    expect(await page.textContent("#report")).toBe("");

    await page.fill("#request-id", "");
    await page.fill("#server-name", "api.example.com");
    expect(await page.textContent("#status")).toBe(`Not the proof you asked for: the proof is of server ${TARGET_HOST}, expected api.example.com`);
    await page.fill("#server-name", "");
    expect(await page.getAttribute("#status", "class")).toBe("test-anchor");
  });

  test("with the URL and method the reader asked for it says they match; another path, port or method shows it is not that proof", async () => {
    const url = `https://${TARGET_HOST}:${target.port}/data`;
    await page.goto(`${prover.url}/viewer?url=${encodeURIComponent(url)}&method=get&allowTestAnchor=1`);
    expect(await page.inputValue("#url")).toBe(url);
    await show(result.proofText, prover.notaryPubPem);
    await page.waitForSelector("#status.test-anchor");
    expect(await page.textContent("#status")).toContain("Its URL and method are the ones you gave.");
    await page.fill("#url", `https://${TARGET_HOST}:${target.port}/other`);
    expect(await page.textContent("#status")).toBe('Not the proof you asked for: the proof\'s request target is not the expected 6-byte "/other"');
    await page.fill("#url", url);
    await page.fill("#method", "POST");
    expect(await page.textContent("#status")).toBe('Not the proof you asked for: the proof\'s request method is "GET", not the expected POST');
    await page.fill("#method", "");
    await page.fill("#url", "ftp://x");
    expect(await page.textContent("#status")).toContain("The notary key or the URL you gave is not usable");
    await page.fill("#url", "");
    expect(await page.getAttribute("#status", "class")).toBe("test-anchor");
  });

  test("another notary's key shows invalid; a key that is not a key says so", async () => {
    const otherKey = (await import("../../src/proof/keys.ts")).generateKey("secp256r1").publicKeyPem;
    await show(result.proofText, otherKey);
    await page.waitForSelector("#status.invalid");
    expect(await page.textContent("#status")).toContain("signed by a different notary key");
    await show(result.proofText, "not a key");
    expect(await page.textContent("#status")).toContain("The notary key or the URL you gave is not usable");
  });

  test("a proof made under a test trust anchor is refused until the reader accepts such proofs, then gets no green banner; a public one does; the page may not be framed", async () => {
    // The real proof above was made under the test CA: not accepted by default.
    await page.goto(`${prover.url}/viewer`);
    await show(result.proofText, prover.notaryPubPem);
    await page.waitForSelector("#status.invalid");
    expect(await page.textContent("#status")).toContain("Not the proof you asked for: the proof was made under a TEST trust anchor");
    expect(await page.textContent("#report")).toBe("");
    // Accepted on purpose, its banner is the warning's colour, and says so.
    await page.check("#allow-test-anchor");
    await page.waitForSelector("#status.test-anchor");
    const colours = async () => page.$eval("#status", (node) => (globalThis as unknown as ComputedStyles).getComputedStyle(node).backgroundColor);
    const testColour = await colours();
    const key = generateKey("secp256k1");
    await show(JSON.stringify(signProof(sampleBody(key), key)), key.publicKeyPem);
    await page.waitForSelector("#status.valid");
    const validColour = await colours();
    expect(validColour).toBe("rgb(218, 251, 225)");
    expect(testColour).not.toBe(validColour);
    const answer = await fetch(`${prover.url}/viewer`);
    expect(answer.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });

  test("invisible and right-to-left characters cannot reorder or hide the bytes shown", async () => {
    const key = generateKey("secp256k1");
    const body = sampleBody(key);
    // Bytes `5 000 100`: an Arabic letter mark and a right-to-left letter around them would show `100 000 5`.
    const response = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n\u05d0 5\u061c 000 100\u200b\ufeff";
    body.transcript.recv = directionHiding(response, []);
    body.redactions = [];
    await page.goto(`${prover.url}/viewer`);
    await show(JSON.stringify(signProof(body, key)), key.publicKeyPem);
    await page.waitForSelector("#status.valid");
    const marked = await page.$$eval("mark.escaped", (marks) => marks.map((mark) => mark.textContent));
    expect(marked).toEqual(["\\u061c", "\\u200b", "\\ufeff"]);
    const style = await page.$eval("pre.transcript", (node) => {
      const computed = (globalThis as unknown as ComputedStyles).getComputedStyle(node);
      return { bidi: computed.unicodeBidi, direction: computed.direction };
    });
    expect(style).toEqual({ bidi: "bidi-override", direction: "ltr" });
  });

  test("bidirectional-text controls from a server are shown as escapes, as cli verify shows them", async () => {
    // A server answering text that, shown raw, reads right-to-left from the override on.
    const key = generateKey("secp256k1");
    const body = sampleBody(key);
    const response = 'HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n{"to":"\u202eevil"}';
    body.transcript.recv = directionHiding(response, []);
    body.redactions = [];
    await page.goto(`${prover.url}/viewer`);
    await show(JSON.stringify(signProof(body, key)), key.publicKeyPem);
    await page.waitForSelector("#status.valid");
    const report = (await page.textContent("#report")) ?? "";
    expect(report).toContain('{"to":"\\u202eevil"}');
    expect(report).not.toContain("\u202e");
  });

  test("a proof whose request is hidden is refused, saying what it does not prove, until the reader accepts such proofs", async () => {
    const key = generateKey("secp256k1");
    const hidden = JSON.stringify(signProof(hiddenRequestBody(key), key));
    await page.goto(`${prover.url}/viewer`);
    await show(hidden, key.publicKeyPem);
    await page.waitForSelector("#status.invalid");
    expect(await page.textContent("#status")).toContain(`Not the proof you asked for: the proof's ${HIDDEN_REQUEST_LIMIT}`);
    await page.check("#allow-hidden-request");
    await page.waitForSelector("#status.valid");
    const report = (await page.textContent("#report")) ?? "";
    expect(report).toContain(`WARNING: this proof's ${HIDDEN_REQUEST_LIMIT}`);
    expect(report).toMatch(/Request\s*HIDDEN/);
    expect(report).toContain("port 443, dialled by the notary");
  });

  test("?requestId= loads that proof from this prover and checks it with the prover's key; it offers the file and the cli verify line", async () => {
    await page.goto(`${prover.url}/viewer?requestId=${result.requestId}&allowTestAnchor=1`);
    await page.waitForSelector("#status.test-anchor");
    expect(await page.textContent("#status")).toContain(`proof from ${TARGET_HOST}`);
    // The request id asked for is checked too.
    expect(await page.textContent("#status")).not.toContain("No request id");
    expect(await page.inputValue("#proof")).toBe(result.proofText);
    expect(await page.inputValue("#key")).toBe(prover.notaryPubPem);
    const report = (await page.textContent("#report")) ?? "";
    expect(report).toMatch(new RegExp(`Request\\s*revealed: GET /data HTTP/1\\.1 \\(Host: ${TARGET_HOST}:${target.port}\\)`));
    expect(report).toContain(result.requestId);
    const file = `proof-${result.requestId}.json`;
    expect(await page.getAttribute("#saved a", "download")).toBe(file);
    expect(await page.textContent("#verify-command")).toBe(`cli verify --notary-pub-key notary.pub --proof ${file} --request-id ${result.requestId} --allow-test-anchor`);
    await page.screenshot({ path: SCREENSHOT_BY_ID, fullPage: true });
    expect(statSync(SCREENSHOT_BY_ID).size).toBeGreaterThan(10_000);
  });

  test("a proof with claims shows them above the transcript, one that does not hold marked, and whom the proof was made for", async () => {
    const claimed = await prove({
      prover: prover.url,
      notaryKeys: prover.notaryPubPem,
      allowTestTrustAnchor: true,
      url: `https://${TARGET_HOST}:${target.port}/data`,
      mode: "proxy",
      redact: "res:body:user.id",
      claims: "res:body:user.id>999, res:body:user.id<10, res:body:user.name",
      recipient: "0x00000000000000000000000000000000000000c0",
    });
    await page.goto(`${prover.url}/viewer?allowTestAnchor=1`);
    await show(claimed.proofText, prover.notaryPubPem);
    await page.waitForSelector("#claims");
    const claims = await page.$$eval("#claims li", (items) => items.map((item) => ({ text: item.textContent, className: item.className })));
    expect(claims).toEqual([
      { text: "res:body:user.id > 999: holds", className: "claim" },
      { text: "res:body:user.id < 10: does not hold", className: "claim-false" },
      { text: 'res:body:user.name = "alice"', className: "claim" },
    ]);
    expect(await page.textContent("#claims")).toContain("Made for 0x00000000000000000000000000000000000000c0");
    // Above the transcript: the claims section comes before the first transcript section.
    const order = await page.$$eval("#report > *", (nodes) => nodes.map((node) => node.id || node.textContent?.slice(0, 14)));
    expect(order.indexOf("claims")).toBeLessThan(order.findIndex((text) => text?.startsWith("Request (sent)")));
    expect((await page.textContent("#report")) ?? "").not.toContain("1000,");
  });

  test("a quorum proof shows who signed it, each proof's notary, and its first proof's report; too few of its keys is invalid", async () => {
    const keys = [generateKey("secp256k1"), generateKey("secp256r1")];
    const requestId = crypto.randomUUID();
    const proofs = keys.map((key) => signProof({ ...sampleBody(key), requestId, notarizedAt: Date.now() }, key));
    const quorum = quorumProofOf(proofs, 2);
    if (!("proofs" in quorum)) throw new Error(quorum.reason);
    await page.goto(`${prover.url}/viewer`);
    await show(JSON.stringify(quorum), keys.map((key) => key.publicKeyPem).join(""));
    await page.waitForSelector("#signers");
    expect(await page.textContent("#status")).toStartWith("Valid proof from api.example.com, signed by a quorum of 2 notaries.");
    const signers = (await page.$$eval("#signers li", (items) => items.map((item) => item.textContent ?? ""))).map((line) => line.replace(/, notarized at .*/, ""));
    expect(signers).toEqual(keys.map((key) => `notary key ${publicKeyFingerprint(decodePublicKeyPem(key.publicKeyPem))} (${key.algorithm})`));
    expect(await page.textContent("#signers h2")).toBe("Signed by 2 distinct notaries (at least 2 asked), each in its own session");
    // The first proof's claims and transcript follow.
    expect(await page.textContent("#claims")).toContain('res:body:currency = "EUR"');
    await show(JSON.stringify(quorum), keys[0]!.publicKeyPem);
    expect(await page.textContent("#status")).toStartWith("Invalid: proof 2: invalid proof: signed by a different notary key");
  });

  test("?requestId= of an id this prover never saw: the page says it waits, then why no proof came", async () => {
    const unknown = crypto.randomUUID();
    await page.goto(`${prover.url}/viewer?requestId=${unknown}`);
    await page.waitForSelector("#status.invalid", { timeout: 20_000 });
    const status = (await page.textContent("#status")) ?? "";
    expect(status).toContain(`No proof of ${unknown} from this prover: unknown_request`);
    expect(await page.textContent("#saved")).toBe("");
  });

  test("GET / links the viewer, the OpenAPI document and /info", async () => {
    await page.goto(`${prover.url}/`);
    const links = await page.$$eval("a", (anchors) => anchors.map((a) => a.getAttribute("href")));
    expect(links).toEqual(["/viewer", "/openapi.json", "/info"]);
    for (const link of links) expect((await fetch(`${prover.url}${link}`)).status).toBe(200);
  });

  test("the page saved as a file works offline, with no prover behind it", async () => {
    const html = await (await fetch(`${prover.url}/viewer`)).text();
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!www\.w3\.org)/);
    const path = join(scratchDir("viewer-file"), "viewer.html");
    writeFileSync(path, html);
    await page.goto(`file://${path}?allowTestAnchor=1`);
    expect(await page.isDisabled("#prover-key")).toBe(true);
    await show(result.proofText, prover.notaryPubPem);
    await page.waitForSelector("#status.test-anchor");
    expect(await page.textContent("#status")).toContain(`Valid only under a TEST trust anchor (not the public web PKI): proof from ${TARGET_HOST}`);
  });
});
