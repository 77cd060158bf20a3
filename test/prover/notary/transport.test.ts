/**
 * The embedded notary called in this process (src/prover/notary/transport.ts): its routes answer as its server does,
 * admission first, and a call is given up when its time is out, as over the network.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { NotaryServer } from "../../../src/app/notary.ts";
import { decodePublicKeyPem, generateKey } from "../../../src/proof/keys.ts";
import { createNotaryClient } from "../../../src/prover/notary/client.ts";
import { inProcessTransport } from "../../../src/prover/notary/transport.ts";
import { appErrorOfAsync } from "../../../testkit/app-error.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { type VersionedTarget, startVersionedTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { startProxyNotary } from "../../notary/proxy-mode/support/proxy-notary.ts";

const EMBEDDED_KEY = "this-prover-alone-knows-it";
const key = generateKey("secp256k1");
let target: VersionedTarget;
let notary: NotaryServer;

beforeAll(async () => {
  target = await startVersionedTarget(tlsFixture(), "TLSv1.3");
  notary = startProxyNotary({ ports: [target.port], key, auth: { embeddedKey: EMBEDDED_KEY } });
});

afterAll(async () => {
  await notary?.stop(0);
  target?.stop();
});

const inProcessClient = (apiKey: string) => createNotaryClient(notary.url, apiKey, [decodePublicKeyPem(key.publicKeyPem)], inProcessTransport(notary.handle));

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
  const counting = inProcessTransport(async () => (handled++, new Response("{}")));
  const refused = await appErrorOfAsync(async () => counting(`${notary.url}/proxy-session`, { method: "POST", body: new Uint8Array(3) }));
  expect(refused).toEqual({ code: "internal", message: "an in-process notary call takes a text body" });
  expect(handled).toBe(0);
});

test("a call whose signal aborts is given up, as fetch gives it up", async () => {
  const never = inProcessTransport(() => new Promise<Response>(() => {}));
  const error = await never(`${notary.url}/info`, { method: "GET", signal: AbortSignal.timeout(30) }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect((error as Error).name).toBe("TimeoutError");
});
