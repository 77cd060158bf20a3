import { afterAll, expect, test } from "bun:test";
import { type Tls13SuiteName, TLS13_SUITES, isTls12Target } from "../../../src/tls/client/exchange.ts";
import { waitUntil } from "../../../testkit/wait.ts";
import { type ServerProcess, startServerProcess } from "../../../testkit/server-process.ts";
import { BIG_BODY, CREDENTIAL, type IdentityFiles, type Proof, expectProven, helloRetried, interopIdentities, prove } from "./interop.ts";

/**
 * The TLS 1.3 client proves against OpenSSL's s_server in its plain mode: it prints what it received on stdout
 * (where the test reads the request, the hidden Authorization whole) and sends what the test writes on its stdin
 * (the answer, echoing that Authorization).
 */

const ids = interopIdentities();
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

async function sServer(identity: IdentityFiles, args: string[] = []): Promise<ServerProcess> {
  const command = ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", identity.chainPath, "-cert_chain", identity.chainPath, "-key", identity.keyPath, "-naccept", "1", ...args];
  const server = await startServerProcess(command, (output) => Number(/ACCEPT 127\.0\.0\.1:(\d+)/.exec(output)?.[1]) || undefined);
  servers.push(server);
  return server;
}

/** Proves against `server`, answering the request it prints with its Authorization (and `extra` body bytes). */
async function proveAndAnswer(server: ServerProcess, options: Parameters<typeof prove>[2] = {}, extra = 0): Promise<Proof> {
  const proving = prove(ids, server.port, options);
  // s_server notes each read that had to wait ("Read BLOCK", as after a KeyUpdate) amid the data it prints.
  const printed = () => server.output().replaceAll("Read BLOCK\n", "");
  const received = await waitUntil("s_server to print the request", () => /GET \/ HTTP\/1\.1\r\n[^]*?\r\n\r\n/.exec(printed())?.[0], (head) => head !== undefined, 30_000);
  const authorization = /\r\nAuthorization: ([^\r\n]*)\r\n/.exec(received!)?.[1];
  expect(authorization).toBe(CREDENTIAL);
  const body = `received authorization: ${authorization}\n${"z".repeat(extra)}`;
  server.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  return proving;
}

test.each(TLS13_SUITES)("%s, ECDSA certificate, X25519, session tickets", async (suite: Tls13SuiteName) => {
  const server = await sServer(ids.ecdsa, ["-tls1_3", "-ciphersuites", suite]);
  const proof = await proveAndAnswer(server);
  expectProven(proof, suite);
  expect(proof.exchange.sessionTickets).toBe(2);
});

test("an RSA certificate: RSA-PSS signatures", async () => {
  expectProven(await proveAndAnswer(await sServer(ids.rsa, ["-tls1_3"])));
});

test("a server limited to P-256: a HelloRetryRequest, or a P-256 share offered first", async () => {
  const retried = await proveAndAnswer(await sServer(ids.ecdsa, ["-tls1_3", "-groups", "P-256"]));
  expectProven(retried);
  expect(helloRetried(retried)).toBe(true);
  const direct = await proveAndAnswer(await sServer(ids.ecdsa, ["-tls1_3", "-groups", "P-256"]), { keyShares: ["p256"] });
  expectProven(direct);
  expect(helloRetried(direct)).toBe(false);
});

test("an answer split over many records", async () => {
  const proof = await proveAndAnswer(await sServer(ids.ecdsa, ["-tls1_3"]), {}, BIG_BODY);
  expectProven(proof);
  expect(proof.exchange.recv.length).toBeGreaterThan(BIG_BODY);
});

test("a TLS 1.2-only server: refused, and told apart so that another client can prove it", async () => {
  const server = await sServer(ids.ecdsa, ["-tls1_2"]);
  const error = await prove(ids, server.port).then(() => null, (e: unknown) => e);
  expect(error).toMatchObject({ code: "tls_unsupported", message: "the target refused the TLS 1.3 handshake with alert 70 (protocol_version)" });
  expect(isTls12Target(error)).toBe(true);
});
