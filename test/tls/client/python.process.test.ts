import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { TLS13_SUITES } from "../../../src/tls/client/exchange.ts";
import { type ServerProcess, startServerProcess } from "../../../testkit/server-process.ts";
import { BIG_BODY, type IdentityFiles, expectP256RetryOrNot, expectProven, interopIdentities, prove } from "./interop.ts";

/** The TLS 1.3 client proves against Python's ssl module (http.server over an SSLContext), in its own process. */

const ids = interopIdentities();
const SCRIPT = join(import.meta.dir, "servers", "https_echo.py");
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

async function start(identity: IdentityFiles, options: Record<string, string> = {}): Promise<ServerProcess> {
  const server = await startServerProcess(["python3", SCRIPT, identity.keyPath, identity.chainPath, JSON.stringify(options)], (output) => Number(/LISTENING (\d+)/.exec(output)?.[1]) || undefined);
  servers.push(server);
  return server;
}

test.each(TLS13_SUITES)("%s, ECDSA certificate (the client offers that suite only)", async (suite) => {
  expectProven(await prove(ids, (await start(ids.ecdsa)).port, { suites: [suite] }), suite);
});

test("an RSA certificate, session tickets, an answer split over many records", async () => {
  const proof = await prove(ids, (await start(ids.rsa)).port, {}, "/big");
  expectProven(proof);
  expect(proof.exchange.sessionTickets).toBeGreaterThan(0);
  expect(proof.exchange.recv.length).toBeGreaterThan(BIG_BODY);
});

test("a server limited to P-256: a HelloRetryRequest, or a P-256 share offered first", async () => {
  const server = await start(ids.ecdsa, { ecdhCurve: "prime256v1" });
  await expectP256RetryOrNot(ids, server.port);
});
