import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { bytesToHex } from "@noble/hashes/utils.js";
import { TLS13_SUITES } from "../../../src/tls/client/exchange.ts";
import { readHellos } from "../../../src/tls/session-start.ts";
import { type ServerProcess, startServerProcess } from "../../../testkit/server-process.ts";
import { BIG_BODY, type IdentityFiles, expectP256RetryOrNot, expectProven, helloRetried, interopIdentities, prove } from "./interop.ts";

/** The TLS 1.3 client proves against Node's https (OpenSSL) and Bun's (BoringSSL), each in its own process. */

const ids = interopIdentities();
const SCRIPT = join(import.meta.dir, "servers", "https-echo.mjs");

describe.each([
  ["Node", "node"],
  ["Bun", process.execPath],
])("%s's https", (name, runtime) => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });
  async function start(identity: IdentityFiles, options: Record<string, string> = {}): Promise<ServerProcess> {
    const command = [runtime, SCRIPT, identity.keyPath, identity.chainPath, JSON.stringify(options)];
    const server = await startServerProcess(command, (output) => Number(/LISTENING (\d+)/.exec(output)?.[1]) || undefined);
    servers.push(server);
    return server;
  }

  test.each(TLS13_SUITES)("%s, ECDSA certificate, X25519", async (suite) => {
    const server = await start(ids.ecdsa);
    const proof = await prove(ids, server.port, { suites: [suite] });
    expectProven(proof, suite);
    expect(helloRetried(proof)).toBe(false);
  });

  test("an RSA certificate: RSA-PSS signatures", async () => {
    expectProven(await prove(ids, (await start(ids.rsa)).port));
  });

  // Bun's server cannot load an RSASSA-PSS key at all; Node's can, and the client (whose certificate parser is
  // Bun's) refuses its certificate with a clear error rather than a crash.
  if (name === "Node") {
    test("an RSASSA-PSS certificate is refused clearly: its key cannot be read here", async () => {
      const error = await prove(ids, (await start(ids.rsaPss)).port).then(() => null, (e: unknown) => e);
      expect(error).toMatchObject({ code: "tls_unsupported", message: expect.stringMatching(/an RSASSA-PSS key is not supported/) });
    });
  }

  test("a server that wants P-256 asks for it with a HelloRetryRequest; offered first, it needs none", async () => {
    const server = await start(ids.ecdsa, { ecdhCurve: "P-256" });
    await expectP256RetryOrNot(ids, server.port);
  });

  test("session tickets after the handshake, ignored; an answer split over many records", async () => {
    const server = await start(ids.ecdsa);
    const proof = await prove(ids, server.port, {}, "/big");
    expectProven(proof);
    expect(proof.exchange.sessionTickets).toBeGreaterThan(0);
    expect(proof.exchange.recv.length).toBeGreaterThan(BIG_BODY);
    expect(readHellos(proof.exchange.relayed).server.remaining).toBeGreaterThan(BIG_BODY / 16_384);
  });

  test("the server's own key log holds the server secrets the client derived", async () => {
    const server = await start(ids.ecdsa);
    const { exchange } = await prove(ids, server.port);
    const random = bytesToHex(readHellos(exchange.relayed).clientHello.random);
    const logged = (label: string) => new RegExp(`KEYLOG ${label} ${random} ([0-9a-f]+)`).exec(server.output())?.[1];
    if (runtime === "node") {
      expect(logged("SERVER_HANDSHAKE_TRAFFIC_SECRET")).toBe(bytesToHex(exchange.serverSecrets.handshake));
      expect(logged("SERVER_TRAFFIC_SECRET_0")).toBe(bytesToHex(exchange.serverSecrets.application));
    } else {
      // Bun's https server emits no key log: what stands for it is that every one of its records opened.
      expect(logged("SERVER_TRAFFIC_SECRET_0")).toBeUndefined();
    }
  });
});
