import { afterAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Tls13SuiteName, TLS13_SUITES } from "../../../src/tls/client/exchange.ts";
import { scratchDir } from "../../../testkit/env.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { BIG_BODY, type IdentityFiles, accepting, expectP256RetryOrNot, expectProven, freePort, interopIdentities, prove } from "./interop.ts";

/**
 * The TLS 1.3 client proves against nginx (the Debian package, .ci/debian-packages), one foreground process per
 * configuration: `return 200` echoes the Authorization it received, /big serves a 200 kB file with it in a header.
 */

const ids = interopIdentities();
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(stops.map((stop) => stop()));
});

interface NginxTls {
  identity: IdentityFiles;
  /** ssl_ecdh_curve (default X25519:prime256v1). */
  curves?: string;
  /** TLS 1.3 suites, through OpenSSL's Ciphersuites command. */
  suites?: readonly Tls13SuiteName[];
}

async function startNginx({ identity, curves = "X25519:prime256v1", suites = TLS13_SUITES }: NginxTls): Promise<number> {
  const dir = scratchDir("nginx");
  const www = join(dir, "www");
  mkdirSync(www);
  writeFileSync(join(www, "big"), "y".repeat(BIG_BODY));
  const port = await freePort();
  const config = `
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  default_type text/plain;
  client_body_temp_path ${dir}/client-body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port} ssl;
    server_name ${TARGET_HOST};
    ssl_certificate ${identity.chainPath};
    ssl_certificate_key ${identity.keyPath};
    ssl_protocols TLSv1.3;
    ssl_ecdh_curve ${curves};
    ssl_conf_command Ciphersuites ${suites.join(":")};
    add_header X-Received-Authorization $http_authorization always;
    location = /big { root ${www}; }
    location / { return 200 "received authorization: $http_authorization\\n"; }
  }
}
`;
  writeFileSync(join(dir, "nginx.conf"), config);
  const child = Bun.spawn(["nginx", "-p", dir, "-e", join(dir, "error.log"), "-c", join(dir, "nginx.conf")], { stdout: "ignore", stderr: "pipe" });
  stops.push(async () => {
    child.kill();
    await child.exited;
  });
  await accepting(port, () => (child.exitCode !== null ? `nginx exited with ${child.exitCode}` : undefined));
  return port;
}

test.each(TLS13_SUITES)("%s alone, ECDSA certificate, session tickets", async (suite) => {
  const proof = await prove(ids, await startNginx({ identity: ids.ecdsa, suites: [suite] }));
  expectProven(proof, suite);
  expect(proof.exchange.sessionTickets).toBeGreaterThan(0);
});

test("an RSA certificate: RSA-PSS signatures", async () => {
  expectProven(await prove(ids, await startNginx({ identity: ids.rsa })));
});

test("an RSASSA-PSS certificate is refused clearly: its key cannot be read here", async () => {
  const error = await prove(ids, await startNginx({ identity: ids.rsaPss })).then(() => null, (e: unknown) => e);
  expect(error).toMatchObject({ code: "tls_unsupported", message: expect.stringMatching(/an RSASSA-PSS key is not supported/) });
});

test("a server limited to P-256: a HelloRetryRequest, or a P-256 share offered first", async () => {
  const port = await startNginx({ identity: ids.ecdsa, curves: "prime256v1" });
  await expectP256RetryOrNot(ids, port);
});

test("an answer split over many records, the Authorization echoed in a header", async () => {
  const proof = await prove(ids, await startNginx({ identity: ids.ecdsa }), {}, "/big");
  const answer = new TextDecoder().decode(proof.exchange.recv);
  expect(answer).toMatch(/\r\nX-Received-Authorization: Bearer tlsproof-interop-0123456789abcdef\r\n/);
  expect(proof.exchange.recv.length).toBeGreaterThan(BIG_BODY);
  expect(proof.verified.sentPartly?.hidden).toHaveLength(1);
});
