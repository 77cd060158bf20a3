import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { useBuiltBinary } from "../../../testkit/binary.ts";
import { tempDir } from "../../../testkit/env.ts";
import { processGroup } from "../../../testkit/process.ts";
import { BINARY_CLI, collectText } from "../../../testkit/prover.ts";
import { eventually, waitUntil } from "../../../testkit/wait.ts";

useBuiltBinary();

/** Whether a process has a handler for SIGINT (Linux: bit 1 of /proc/<pid>/status's SigCgt mask). */
const catchesSigint = (pid: number): boolean => {
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]!;
  return (BigInt(`0x${mask}`) & 2n) !== 0n;
};

/**
 * Ctrl-C in a terminal signals the prover's whole process group, its engine hosts too. A host that died of it would
 * take its running sessions with it before the prover's grace period, and be replaced as a crash: hosts catch SIGINT
 * and leave stopping to the prover, which stops them itself, and nothing of the group is left.
 */
test("dist/cli prover start: engine hosts catch SIGINT; Ctrl-C to the group stops everything, the hosts by the prover", async () => {
  // A warm session kept for a host from the start: its setup starts the engine hosts (they start with the first session).
  const child = Bun.spawn(["setsid", ...BINARY_CLI, "prover", "start"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PROVER_PORT: "0",
      PROVER_DATA_DIR: tempDir("signals"),
      PROVER_POOL_SIZE: "1",
      PROVER_POOL_HOSTS: "warm.test",
      PROVER_ENGINE_HOSTS: "2",
    },
    stdout: "ignore",
    stderr: "pipe",
  });
  const log = collectText(child.stderr);
  const started = /engine host started component=engine pid=(\d+)/g;
  await waitUntil("two engine hosts to start", log, (text) => text.includes("prover listening") && [...text.matchAll(started)].length === 2, 60_000, { context: log });
  const hosts = [...log().matchAll(started)].map((m) => Number(m[1]));
  expect(hosts).toHaveLength(2);
  for (const pid of hosts) expect(catchesSigint(pid)).toBe(true);
  expect(processGroup(child.pid).sort()).toEqual([child.pid, ...hosts].sort());

  process.kill(-child.pid, "SIGINT");
  expect(await child.exited).toBe(0);
  expect(await eventually(() => processGroup(child.pid), (left) => left.length === 0, 30_000)).toEqual([]);
  expect(log()).toContain("shutting down component=prover signal=SIGINT");
  expect(log()).not.toContain("stopped unexpectedly");
}, 90_000);
