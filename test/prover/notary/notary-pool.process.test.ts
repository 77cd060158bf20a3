/**
 * NotaryPool against two real `cli notary start` processes (no MPC: sessions are opened and released only):
 * round-robin over the healthy ones with every call routed to the notary that opened the session, a killed
 * notary left out (new sessions go to the other, work waiting on its sessions gives up) and taken back once
 * it answers again.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createLogger } from "../../../src/base/log.ts";
import { createNotaryClient } from "../../../src/prover/notary/client.ts";
import { NotaryPool } from "../../../src/prover/notary/notary-pool.ts";
import { runCli, SOURCE_CLI } from "../../../testkit/prover.ts";
import { type RunningNotary, eventually, freePort, notaryConfig, notarySessions, startNotary } from "../../../testkit/notary.ts";
import { dirname, join } from "node:path";
import { readFileSync } from "node:fs";

const sizes = { maxSentData: 1024, maxRecvData: 2048 };
const configs: string[] = [];
const notaries: RunningNotary[] = [];
const keys: string[] = [];
let pool: NotaryPool;

const start = async (i: number) => (notaries[i] = await startNotary(configs[i]!));

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    // A fixed port, so that a restarted notary is found where it was.
    const config = notaryConfig(["host: 127.0.0.1", `port: ${freePort()}`, "notarization:", "  connect_timeout: 120", "  private_key_path: notary.key", ""].join("\n"));
    expect((await runCli(SOURCE_CLI, ["notary", "keygen", "--out", dirname(config)])).exitCode).toBe(0);
    keys.push(readFileSync(join(dirname(config), "notary.pub"), "utf8"));
    configs.push(config);
    await start(i);
  }
  pool = new NotaryPool(
    notaries.map((n) => createNotaryClient(n.url)),
    { checkEveryMs: 200, backoff: { firstMs: 100, maxMs: 400 }, log: createLogger({ level: "error" }) },
  );
}, 60_000);

afterAll(() => {
  pool?.stop();
  for (const notary of notaries) notary.process.kill("SIGKILL");
});

const position = (sessionId: string) => Number(sessionId.split("~")[0]);

test("sessions alternate between healthy notaries; each session's calls reach the notary that opened it", async () => {
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push(await pool.createSession("mpc", sizes));
  expect(ids.map(position).sort()).toEqual([0, 0, 1, 1]);
  expect(position(ids[0]!)).not.toBe(position(ids[1]!));
  expect(await notarySessions(notaries[0]!.url)).toBe(2);
  expect(await notarySessions(notaries[1]!.url)).toBe(2);
  expect(pool.socketUrl("mpc", ids[0]!)).toStartWith(notaries[position(ids[0]!)]!.url.replace(/^http/, "ws"));
  // Releasing a session frees a place on its own notary only.
  const counts = async () => Promise.all(notaries.map((n) => notarySessions(n.url)));
  for (const id of ids) {
    const before = await counts();
    await pool.release("mpc", id);
    const expected = before.map((n, i) => (i === position(id) ? n - 1 : n));
    expect(await counts()).toEqual(expected);
  }
  expect(await counts()).toEqual([0, 0]);
  const statuses = await eventually(() => pool.statuses(), (list) => list.every((s) => s.publicKey !== null), 5_000);
  expect(statuses.map((s) => [s.publicKey, s.healthy])).toEqual([
    [keys[0]!, true],
    [keys[1]!, true],
  ]);
  expect((await pool.info()).publicKey).toBe(keys[0]!);
});

test("a killed notary: work on its session gives up, new sessions go to the other, it comes back once it answers", async () => {
  let onSecond = await pool.createSession("mpc", sizes);
  if (position(onSecond) !== 1) onSecond = await pool.createSession("mpc", sizes);
  expect(position(onSecond)).toBe(1);
  const waiting = pool.whileReachable(onSecond, new Promise<never>(() => {}));
  notaries[1]!.process.kill("SIGKILL");
  await notaries[1]!.process.exited;
  await expect(waiting).rejects.toMatchObject({ code: "notary_unavailable" });
  expect(pool.statuses()[1]).toEqual({ publicKey: keys[1]!, signatureAlgorithm: "secp256k1", ethereumAddress: expect.any(String), healthy: false });

  const before = await notarySessions(notaries[0]!.url);
  const ids = [await pool.createSession("mpc", sizes), await pool.createSession("mpc", sizes), await pool.createSession("mpc", sizes)];
  expect(ids.map(position)).toEqual([0, 0, 0]);
  expect(await notarySessions(notaries[0]!.url)).toBe(before + 3);
  // The primary stays the first listed notary while it is healthy.
  expect((await pool.info()).publicKey).toBe(keys[0]!);

  await start(1);
  expect(await eventually(() => pool.statuses()[1]!.healthy, (healthy) => healthy, 10_000)).toBe(true);
  const after = [await pool.createSession("mpc", sizes), await pool.createSession("mpc", sizes)];
  expect(after.map(position).sort()).toEqual([0, 1]);
  await Promise.all([...ids, ...after].map((id) => pool.release("mpc", id)));
}, 60_000);

test("a notary restarted with a new key is refused, not trusted, by a client that met its first key", async () => {
  // A client that met notary 1 with its first key (its first contact pins it).
  const client = createNotaryClient(notaries[1]!.url);
  expect((await client.info()).publicKey).toBe(keys[1]!);
  notaries[1]!.process.kill("SIGKILL");
  await notaries[1]!.process.exited;
  expect((await runCli(SOURCE_CLI, ["notary", "keygen", "--out", dirname(configs[1]!), "--force"])).exitCode).toBe(0);
  await start(1);
  const refusal = await client.info().then(
    () => null,
    (error: { code?: string; message?: string }) => error,
  );
  expect(refusal?.code).toBe("notary_untrusted");
  expect(refusal?.message).toContain("key changed");
}, 60_000);
