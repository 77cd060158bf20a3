import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { tlsFixture } from "../../../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../../../testkit/prover.ts";
import { errorData, firstEvent, proofData } from "../../../../testkit/sse.ts";
import { startTarget } from "../../../../testkit/target.ts";
import { once } from "../../../../testkit/once.ts";
import { TARGET_HOST } from "../../../../testkit/tls-fixture.ts";

const MPC_MS = 600_000;
/** Does not fit the small class (512 received bytes), fits the large one (2048). */
const ANSWER_BYTES = 1000;

/**
 * Sized sessions in a real `cli prover start` process (real MPC, embedded notary): an unseen GET starts in
 * the smallest class, its answer does not fit, the prover repeats it once in the class that fits and the
 * proof verifies; the next call to that endpoint goes straight to the learned class; a POST that overflows
 * is not repeated.
 */
describe("sized sessions (real MPC)", () => {
  let target: Server<undefined>;
  let prover: RunningProver;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!, { PROVER_SIZE_CLASSES: "512/512,1024/2048" });
  }, 60_000);

  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 60_000);

  async function proxy(path: string, init: RequestInit = {}) {
    const requestId = crypto.randomUUID();
    const outcome = firstEvent(`${prover.url}/proof/${requestId}`, MPC_MS);
    const response = await fetch(`${prover.url}/proxy`, {
      ...init,
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}${path}`, "T-REQUEST-ID": requestId, ...init.headers },
    });
    return { response, body: await response.text(), event: await outcome };
  }

  /** The first call to the endpoint: its answer overflows the smallest class. Made once, by the first test that needs it. */
  const firstCall = once(() => proxy(`/big?bytes=${ANSWER_BYTES}`));

  test("a GET whose answer overflows the smallest class is repeated once in the class that fits; its proof verifies", async () => {
    const { response, body, event } = await firstCall();
    expect(response.status).toBe(200);
    expect(body).toBe("x".repeat(ANSWER_BYTES));
    expect(response.headers.get("t-session-retried")).toBe("1024/2048");
    expect(response.headers.get("t-session-class")).toBe("1024/2048");
    expect(prover.log()).toMatch(/did not fit its session: repeating the GET once.*from[=":]+512\/512.*to[=":]+1024\/2048/);

    const verified = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", "-", "--json"], proofData(event).proofText);
    expect(verified.exitCode).toBe(0);
    const proof = JSON.parse(verified.stdout) as { valid: boolean; recv: { text: string } };
    expect(proof.valid).toBe(true);
    expect(proof.recv.text).toEndWith("x".repeat(ANSWER_BYTES));
  }, MPC_MS);

  test("the endpoint's size was learned: the next call goes straight to the class that fits", async () => {
    expect((await firstCall()).response.status).toBe(200);
    const { response, event } = await proxy(`/big?bytes=${ANSWER_BYTES - 10}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("t-session-class")).toBe("1024/2048");
    expect(response.headers.get("t-session-retried")).toBeNull();
    expect(proofData(event).proofText).toContain("requestId");
  }, MPC_MS);

  test("a POST whose answer overflows is not repeated: the clear error, no proof", async () => {
    // An unseen POST gets the default class (the limits here); announcing 512 received bytes makes it overflow.
    const { response, body, event } = await proxy("/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "T-MAX-RECV-DATA": "512" },
      body: JSON.stringify({ pad: "p".repeat(300) }),
    });
    expect(response.status).toBe(502);
    expect(JSON.parse(body)).toMatchObject({ error: { code: "response_too_large", overflow: { direction: "recv" } } });
    expect(errorData(event)).toMatchObject({ code: "response_too_large" });
  }, MPC_MS);
});
