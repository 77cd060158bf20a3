import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Proof } from "../../src/proof/format.ts";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary, startNotary } from "../../testkit/notary.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { type NotaryAnswer, openMaliciousSession } from "../../testkit/malicious-prover.ts";
import { testPostgresUrl } from "../../testkit/postgres.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../testkit/scripted-target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * A notary signs one statement per request id, ever (src/notary/ledger.ts): a prover that opens a second session and
 * asks for an attestation under an id the notary signed before is refused, after a restart too, and by any replica
 * sharing the notary's PostgreSQL ledger. Real `cli notary start` processes, a real TLS 1.3 target, a prover that
 * speaks the notary's wire protocol itself.
 */
const KEY = "ledger-test-key-5e1b";
const tls = tlsFixture();
let target: ScriptedTarget;

beforeAll(async () => {
  target = await startScriptedTarget(tls, { version: "TLSv1.3" }, ({ socket }) => {
    const body = `{"at":${Date.now()}}`;
    socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  });
}, 60_000);

afterAll(() => target?.stop());

const settings = (extra: string[] = []) => [
  "host: 127.0.0.1",
  "port: 0",
  "notarization:",
  "  private_key_path: notary.key",
  ...proxyToLocalTargets([target.port]),
  ...extra,
];

/** A whole proxy-mode exchange with the target through `notaryUrl`, attested under `requestId`. */
async function attested(notaryUrl: string, requestId: string): Promise<NotaryAnswer> {
  const session = await openMaliciousSession({ notaryUrl, apiKey: KEY, serverName: TARGET_HOST, port: target.port, caPem: tls.caPem });
  session.send(`GET / HTTP/1.1\r\nHost: ${TARGET_HOST}:${target.port}\r\nConnection: close\r\n\r\n`);
  await session.relayClosed;
  return session.attest({ requestId });
}

const refusal = (answer: NotaryAnswer) => ({ status: answer.status, code: answer.body.error?.code, message: answer.body.error?.message });

describe("the notary's ledger", () => {
  let notary: KeyedNotary;

  afterAll(() => notary?.notary.process.kill("SIGKILL"));

  test("a second session under a signed id is refused, also after a restart; the ledger sits beside the key", async () => {
    notary = await startKeyedNotary(KEY, settings());
    const id = crypto.randomUUID();
    const first = await attested(notary.notary.url, id);
    expect(first.status).toBe(200);
    expect((first.body as unknown as Proof).body.requestId).toBe(id);
    const again = await attested(notary.notary.url, id);
    expect(refusal(again)).toEqual({
      status: 409,
      code: "already_attested",
      message: `this notary already signed a statement for request id ${id}: it signs one per request id, ever`,
    });
    expect(existsSync(join(notary.pubPath, "..", "notary-ledger.sqlite"))).toBe(true);
    // Restarted on the same config, key and ledger: the id stays spent; another is signed.
    notary.notary.process.kill("SIGTERM");
    await notary.notary.process.exited;
    notary = { ...notary, notary: await startNotary(join(notary.pubPath, "..", "notary.yaml")) };
    expect(refusal(await attested(notary.notary.url, id))).toMatchObject({ status: 409, code: "already_attested" });
    expect((await attested(notary.notary.url, crypto.randomUUID())).status).toBe(200);
  }, 120_000);
});

describe("a ledger in PostgreSQL, shared by the replicas of one notary", () => {
  const replicas: KeyedNotary[] = [];

  afterAll(() => {
    for (const replica of replicas) replica.notary.process.kill("SIGKILL");
  });

  test("an id one replica signed is refused by the other", async () => {
    const url = await testPostgresUrl();
    const first = await startKeyedNotary(KEY, settings(["ledger:", `  database_url: ${url}`]));
    replicas.push(first);
    // The second replica: the same key, its own process and config folder.
    const keyFiles = { "notary.key": await Bun.file(join(first.pubPath, "..", "notary.key")).text(), "notary.pub": await Bun.file(first.pubPath).text() };
    const second = await startKeyedNotary(KEY, settings(["ledger:", `  database_url: ${url}`]), [], {}, keyFiles);
    replicas.push(second);
    expect(await Bun.file(second.pubPath).text()).toBe(await Bun.file(first.pubPath).text());
    const id = crypto.randomUUID();
    expect((await attested(first.notary.url, id)).status).toBe(200);
    expect(refusal(await attested(second.notary.url, id))).toMatchObject({ status: 409, code: "already_attested" });
    expect((await attested(second.notary.url, crypto.randomUUID())).status).toBe(200);
  }, 120_000);
});
