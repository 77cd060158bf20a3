/**
 * MPC mode against `openssl s_server -www`, the first server many people reach for: the engine waits on it, silent,
 * and before the watch it sat out the session's 300 s deadline. Through `cli prover start` with a silence limit of
 * 5 s: a clear error naming proxy mode, soon after the exchange stopped moving. One MPC session.
 */
import { afterAll, expect, test } from "bun:test";
import { tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { type ServerProcess, startServerProcess } from "../../testkit/server-process.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

const MPC_MS = 240_000;
let server: ServerProcess | undefined;
let prover: RunningProver | undefined;
afterAll(async () => {
  await prover?.stop();
  await server?.stop();
});

test("an MPC exchange that stops moving is given up after the silence limit, naming proxy mode", async () => {
  const { dir } = tlsFixture();
  server = await startServerProcess(
    ["openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", `${dir}/chain.pem`, "-cert_chain", `${dir}/chain.pem`, "-key", `${dir}/leaf.key`, "-www", "-tls1_2"],
    (output) => Number(/ACCEPT 127\.0\.0\.1:(\d+)/.exec(output)?.[1]) || undefined,
  );
  // Its status page is about 4 KB: a session that holds it, so that the exchange itself is what stalls.
  prover = await startProver(SOURCE_CLI, server.port, { PROVER_MAX_RECV_DATA: "6144", PROVER_RESPONSE_TIMEOUT: "5000ms" });
  const response = await fetch(`${prover.url}/proxy`, {
    headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${server.port}/`, "T-REQUEST-ID": crypto.randomUUID(), "T-MAX-RECV-DATA": "6000" },
  });
  const { error } = (await response.json()) as { error: { code: string; message: string } };
  expect(response.status).toBe(502);
  expect(error.code).toBe("target_request_failed");
  expect(error.message).toMatch(/^the MPC exchange made no progress for [5-9] s/);
  expect(error.message).toContain("proxy mode (T-PROOF-MODE: proxy)");
}, MPC_MS);
