/**
 * The embedded notary called in this process (src/prover/notary/transport.ts): its routes answer as its server does,
 * admission first, and a call is given up when its time is out, as over the network; its relay opens on its proxy
 * mode's socket in this process, refused as an upgrade is, and carries an exchange the notary then signs.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { NotaryServer } from "../../../src/app/notary.ts";
import { decodePublicKeyPem, generateKey } from "../../../src/proof/keys.ts";
import { type NotaryClient, createNotaryClient } from "../../../src/prover/notary/client.ts";
import { inProcessTransport } from "../../../src/prover/notary/transport.ts";
import { openRelaySocket } from "../../../src/prover/proxy-mode/relay-socket.ts";
import { verifyProof } from "../../../src/proof/verify.ts";
import { trustAnchors } from "../../../src/engine/trust-anchor.ts";
import { keysToReveal } from "../../../src/tls/verify-session.ts";
import { appErrorOfAsync } from "../../../testkit/app-error.ts";
import { getOverRelay } from "../../../testkit/relayed-get.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { type VersionedTarget, startVersionedTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { startProxyNotary } from "../../notary/proxy-mode/support/proxy-notary.ts";
import { afterPendingWork } from "../../../testkit/wait.ts";

const EMBEDDED_KEY = "this-prover-alone-knows-it";
const key = generateKey("secp256k1");
let target: VersionedTarget;
let notary: NotaryServer;

beforeAll(async () => {
  target = await startVersionedTarget(tlsFixture(), "TLSv1.3");
  notary = startProxyNotary({ ports: [target.port], key, auth: { embeddedKey: EMBEDDED_KEY }, proxy: { trustAnchorsPem: trustAnchors(tlsFixture().caPem) } });
});

afterAll(async () => {
  await notary?.stop(0);
  target?.stop();
});

const inProcessClient = (apiKey: string, on: NotaryServer = notary) => createNotaryClient(on.url, apiKey, [decodePublicKeyPem(key.publicKeyPem)], inProcessTransport(on));

/** A transport whose calls `handle` answers; it opens no socket. */
const callsOnly = (handle: (request: Request) => Promise<Response>) =>
  inProcessTransport({
    handle,
    openSocket: () => {
      throw new Error("no socket here");
    },
  });

/** A GET of `path` through a relay opened in this process, with the prover's own TLS client. */
async function relayedGet(client: NotaryClient, path: string) {
  const sessionId = await client.createSession("proxy", { serverName: TARGET_HOST, port: target.port });
  const relay = await openRelaySocket((listener) => client.openSocket("proxy", sessionId, listener, 5_000));
  const exchange = getOverRelay(relay, path, 5_000);
  return { sessionId, relay, exchange };
}

test("a session is opened through the notary's own routes, its body's length declared as an HTTP client declares it", async () => {
  const client = inProcessClient(EMBEDDED_KEY);
  expect((await client.info()).publicKey).toBe(key.publicKeyPem);
  const sessionId = await client.createSession("proxy", { serverName: TARGET_HOST, port: target.port });
  expect(sessionId).toMatch(/\S/);
  const info = (await (await notary.handle(new Request(`${notary.url}/info`))).json()) as { activeProxySessions: number };
  expect(info.activeProxySessions).toBe(1);
  await client.release("proxy", sessionId);
  const after = (await (await notary.handle(new Request(`${notary.url}/info`))).json()) as { activeProxySessions: number };
  expect(after.activeProxySessions).toBe(0);
});

test("admission holds in this process too: without the embedded key no session is opened", async () => {
  const refused = await appErrorOfAsync(() => inProcessClient("another key").createSession("proxy", { serverName: TARGET_HOST, port: target.port }));
  expect(refused?.code).toBe("notary_unavailable");
  expect(refused?.message).toContain("the notary refused this prover");
});

test("a body other than text is refused before any request is made: its length could not be declared as sent", async () => {
  let handled = 0;
  const counting = callsOnly(async () => (handled++, new Response("{}")));
  const refused = await appErrorOfAsync(async () => counting.call(`${notary.url}/proxy-session`, { method: "POST", body: new Uint8Array(3) }));
  expect(refused).toEqual({ code: "internal", message: "an in-process notary call takes a text body" });
  expect(handled).toBe(0);
});

test("a call whose signal aborts is given up, as fetch gives it up", async () => {
  const never = callsOnly(() => new Promise<Response>(() => {}));
  const error = await never.call(`${notary.url}/info`, { method: "GET", signal: AbortSignal.timeout(30) }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect((error as Error).name).toBe("TimeoutError");
});

test("a relay opened in this process carries the exchange, and the notary signs what it relayed", async () => {
  const client = inProcessClient(EMBEDDED_KEY);
  const { sessionId, relay, exchange } = await relayedGet(client, "/data");
  const done = await exchange;
  relay.close();
  const proof = await client.attest("proxy", sessionId, { requestId: crypto.randomUUID(), keys: keysToReveal(done.keylog, relay.handshakeBytes(), false), redactions: [] });
  const verified = verifyProof(JSON.stringify(proof), key.publicKeyPem, { allowHiddenRequest: true, allowTestTrustAnchor: true });
  // What the notary decrypted from the bytes it relayed is the answer the prover read.
  expect(verified.recv.text).toBe(new TextDecoder().decode(done.recv));
  expect(verified.recv.text).toContain("HTTP/1.1 200");
  expect(relay.receivedBytes()).toBeGreaterThan(done.recv.length);
});

test("a relay for an unknown session, or for one whose relay is open, is refused as the upgrade refuses it", async () => {
  const client = inProcessClient(EMBEDDED_KEY);
  const listener = { bytes: () => {}, closed: () => {} };
  expect(await appErrorOfAsync(() => client.openSocket("proxy", "no-such-session", listener, 5_000))).toEqual({
    code: "notary_unavailable",
    message: "the notary's relay could not be opened: unknown or used session",
  });
  const sessionId = await client.createSession("proxy", { serverName: TARGET_HOST, port: target.port });
  const first = await client.openSocket("proxy", sessionId, listener, 5_000);
  expect((await appErrorOfAsync(() => client.openSocket("proxy", sessionId, listener, 5_000)))?.message).toContain("unknown or used session");
  first.close();
  await client.release("proxy", sessionId);
});

test("the notary ending a relay early reaches the prover with its reason, as over a WebSocket", async () => {
  const tight = startProxyNotary({ ports: [target.port], key, auth: { embeddedKey: EMBEDDED_KEY }, proxy: { maxRecvData: 8 * 1024 } });
  try {
    const { relay, exchange } = await relayedGet(inProcessClient(EMBEDDED_KEY, tight), "/big?bytes=200000");
    await exchange.catch(() => undefined);
    await relay.closed;
    expect(relay.endedByNotary()).toMatchObject({ code: "session_failed", message: expect.stringContaining("the target sent more than this notary relays") });
    expect(relay.receivedBytes()).toBeLessThan(200_000);
  } finally {
    await tight.stop(0);
  }
});

test("the prover's end of a relay, once closed, sends nothing more", async () => {
  const client = inProcessClient(EMBEDDED_KEY);
  const sessionId = await client.createSession("proxy", { serverName: TARGET_HOST, port: target.port });
  const closes: number[] = [];
  const end = await client.openSocket("proxy", sessionId, { bytes: () => {}, closed: (code) => closes.push(code) }, 5_000);
  expect(end.send(new Uint8Array([22, 3, 1]))).toBe(true);
  end.close();
  expect(end.send(new Uint8Array([22, 3, 1]))).toBe(false);
  await afterPendingWork();
  // One close, heard by the prover as the notary's socket heard it: a normal one.
  expect(closes).toEqual([1000]);
  await client.release("proxy", sessionId);
});
