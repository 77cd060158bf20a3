import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LOCK_FILE, lockFolder } from "../../src/core/folder-lock.ts";
import { tempDir } from "../../testkit/env.ts";
import { appErrorOf } from "../../testkit/app-error.ts";

/** One process per data folder: the lock file, its holder, and a stale lock taken over. */

const children: Bun.Subprocess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

test("taken: a 0600 file naming this process; a second take in this process is refused; released, it is gone", () => {
  const dir = join(tempDir("lock"), "data");
  const lock = lockFolder(dir, "PROVER_DATA_DIR");
  const path = join(dir, LOCK_FILE);
  expect(readFileSync(path, "utf8")).toBe(`${process.pid}\n`);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  expect(appErrorOf(() => lockFolder(dir, "PROVER_DATA_DIR"))).toEqual({
    code: "data_dir_in_use",
    message: `the data folder ${dir} is in use by process ${process.pid} (this one) (its lock file ${path}): stop it first, or give this prover another folder (PROVER_DATA_DIR)`,
  });
  lock.release();
  expect(existsSync(path)).toBe(false);
  lockFolder(dir, "PROVER_DATA_DIR").release();
});

test("held by another live process: refused naming it; once that process is gone, taken over", async () => {
  const dir = tempDir("lock");
  const other = Bun.spawn(["sleep", "60"]);
  children.push(other);
  writeFileSync(join(dir, LOCK_FILE), `${other.pid}\n`);
  expect(appErrorOf(() => lockFolder(dir, "PROVER_DATA_DIR"))?.message).toContain(`is in use by process ${other.pid} (its lock file`);
  other.kill("SIGKILL");
  await other.exited;
  const lock = lockFolder(dir, "PROVER_DATA_DIR");
  expect(readFileSync(join(dir, LOCK_FILE), "utf8")).toBe(`${process.pid}\n`);
  lock.release();
});

test("a release never removes a lock another process has taken since", () => {
  const dir = tempDir("lock");
  const lock = lockFolder(dir, "PROVER_DATA_DIR");
  writeFileSync(join(dir, LOCK_FILE), "1\n");
  lock.release();
  expect(readFileSync(join(dir, LOCK_FILE), "utf8")).toBe("1\n");
});

test("a lock file naming no process (being written) counts as held", () => {
  const dir = tempDir("lock");
  writeFileSync(join(dir, LOCK_FILE), "");
  expect(appErrorOf(() => lockFolder(dir, "PROVER_DATA_DIR"))?.message).toContain("is in use by another process");
});
