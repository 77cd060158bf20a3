import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import type { EngineHostStatus } from "../../../src/engine/host/engine-hosts.ts";
import type { PoolStatus } from "../../../src/prover/pool/pool.ts";
import { type RunningNotary, freePort, notaryConfig, notarySessions, startNotary } from "../../hardening/support.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { type NotaryRelay, startNotaryRelay } from "../../../testkit/notary-relay.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../../testkit/prover.ts";
import { startTarget } from "../../../testkit/target.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { eventually } from "../../../testkit/wait.ts";

type PoolReply = PoolStatus & { engineHosts: { replaced: { hung: number; died: number }; hosts: EngineHostStatus[] } };

/** The refill deadline before any setup of the class has been timed. Above a small session's setup on two loaded cores. */
const SESSION_TIMEOUT_MS = 40_000;
const HANG_S = 5;
const SIZES = { maxSentData: 512, maxRecvData: 1024 };
const MPC_MS = 120_000;

/**
 * A refill whose setup makes no progress, in a real `cli prover start`: its notary (a real `cli notary start`)
 * stays up and answers HTTP, but a relay black-holes the first MPC socket. The refill is given up at its
 * deadline instead of holding the pool's refill turn until the notary's own timeout; its notary session is
 * released, its engine host (whose call never ends) is replaced, and the next refill makes a warm session.
 */
describe("a stalled refill", () => {
  let notary: RunningNotary;
  let relay: NotaryRelay;
  let target: Server<undefined>;
  let prover: RunningProver;
  let mpcSockets = 0;

  const pool = async (): Promise<PoolReply> => (await fetch(`${prover.url}/pool`)).json() as Promise<PoolReply>;

  beforeAll(async () => {
    notary = await startNotary(notaryConfig(`host: 127.0.0.1\nport: ${freePort()}\nconcurrency: 4\n`));
    relay = startNotaryRelay(notary.url, { passes: () => mpcSockets++ > 0 });
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!, {
      PROVER_NOTARY_URL: relay.url,
      PROVER_POOL_SIZE: "1",
      PROVER_POOL_HOSTS: TARGET_HOST,
      PROVER_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      PROVER_ENGINE_HANG_S: String(HANG_S),
      PROVER_ENGINE_HOSTS: "2",
      PROVER_MAX_SENT_DATA: String(SIZES.maxSentData),
      PROVER_MAX_RECV_DATA: String(SIZES.maxRecvData),
    });
  }, 60_000);

  afterAll(async () => {
    await prover?.stop();
    notary?.process.kill("SIGKILL");
    relay?.stop();
    target?.stop(true);
  }, 60_000);

  test(
    "is given up at its deadline, frees its notary session and engine host, and the pool refills",
    async () => {
      const stalled = await eventually(pool, (p) => p.failures >= 1, SESSION_TIMEOUT_MS + 30_000);
      expect(stalled.lastError).toBe(`warming a ${SIZES.maxSentData}/${SIZES.maxRecvData} session took longer than ${SESSION_TIMEOUT_MS} ms: given up as stalled`);
      expect(mpcSockets).toBeGreaterThanOrEqual(1);
      expect(prover.log()).toContain("given up as stalled");
      // The engine's setup never ends: after PROVER_ENGINE_HANG_S its host is retired and a replacement started.
      const replaced = await eventually(pool, (p) => p.engineHosts.replaced.hung === 1, HANG_S * 1000 + 30_000);
      expect(replaced.engineHosts.replaced).toEqual({ hung: 1, died: 0 });
      expect(prover.log()).toContain("engine host retired");
      // The retry after the back-off passes the relay: one warm session, and the stalled one's notary session is gone.
      const refilled = await eventually(pool, (p) => p.ready === 1, MPC_MS);
      expect(refilled).toMatchObject({ ready: 1, warming: 0, failures: 0, lastError: null });
      expect(mpcSockets).toBe(2);
      expect(await eventually(() => notarySessions(notary.url), (n) => n === 1, 10_000)).toBe(1);
    },
    SESSION_TIMEOUT_MS + MPC_MS + 60_000,
  );
});
