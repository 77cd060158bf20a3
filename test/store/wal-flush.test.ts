/**
 * The SQLite log's flushes (src/store/wal-flush.ts), on a flush the test holds: a commit is durable only after a flush
 * that began after it, flushes never overlap, commits made meanwhile share the next one, and a failed flush fails its
 * waiters and is tried again. Then the fsync itself, on a real file.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FileFlush, fileFlush, walFlush } from "../../src/store/wal-flush.ts";
import { appErrorOfAsync } from "../../testkit/app-error.ts";
import { tempDir } from "../../testkit/env.ts";
import { hasSettled } from "../../testkit/wait.ts";

/** A flush that ends when the test says: each call is one entry of `calls`. */
function heldFlush() {
  const calls: { end: () => void; fail: (error: Error) => void }[] = [];
  let closed = 0;
  const file: FileFlush = {
    flush: () => new Promise<void>((resolve, reject) => calls.push({ end: resolve, fail: reject })),
    close: async () => {
      closed += 1;
    },
  };
  return { file, calls, closed: () => closed };
}

describe("flushes of the log", () => {
  test("nothing committed: durable at once, no flush", async () => {
    const held = heldFlush();
    await walFlush(held.file).durable();
    expect(held.calls).toHaveLength(0);
  });

  test("a commit is durable once a flush that began after it ends; one made during a flush waits for the next", async () => {
    const held = heldFlush();
    const wal = walFlush(held.file);
    wal.committed();
    const first = wal.durable();
    expect(held.calls).toHaveLength(1);
    wal.committed();
    const second = wal.durable();
    // One flush at a time: the second commit waits for the one under way to end, then for its own.
    expect(held.calls).toHaveLength(1);
    held.calls[0]!.end();
    await first;
    expect(await hasSettled(second)).toBe(false);
    expect(held.calls).toHaveLength(2);
    held.calls[1]!.end();
    await second;
    // Both are on disk: asking again flushes nothing.
    await wal.durable();
    expect(held.calls).toHaveLength(2);
  });

  test("commits made before a flush began share it; those made while it runs share the next", async () => {
    const held = heldFlush();
    const wal = walFlush(held.file);
    wal.committed();
    wal.committed();
    const before = [wal.durable(), wal.durable()];
    wal.committed();
    wal.committed();
    const during = [wal.durable(), wal.durable()];
    expect(held.calls).toHaveLength(1);
    held.calls[0]!.end();
    await Promise.all(before);
    expect(await hasSettled(Promise.all(during))).toBe(false);
    expect(held.calls).toHaveLength(2);
    held.calls[1]!.end();
    await Promise.all(during);
    expect(held.calls).toHaveLength(2);
  });

  test("a failed flush fails its waiters with storage_failed; the next durable() flushes again", async () => {
    const held = heldFlush();
    const wal = walFlush(held.file);
    wal.committed();
    const failing = appErrorOfAsync(() => wal.durable());
    held.calls[0]!.fail(new Error("EIO: i/o error"));
    expect(await failing).toEqual({ code: "storage_failed", message: "the SQLite log could not be flushed to disk: EIO: i/o error" });
    const retried = wal.durable();
    expect(held.calls).toHaveLength(2);
    held.calls[1]!.end();
    await retried;
  });

  test("close waits for a flush under way, then closes the file once", async () => {
    const held = heldFlush();
    const wal = walFlush(held.file);
    wal.committed();
    const durable = wal.durable();
    const closing = wal.close();
    expect(await hasSettled(closing)).toBe(false);
    held.calls[0]!.end();
    await Promise.all([durable, closing]);
    expect(held.closed()).toBe(1);
  });
});

describe("the fsync of a file", () => {
  test("opens the file at its first flush and flushes it each time asked", async () => {
    const path = join(tempDir("wal-flush"), "log");
    const flush = fileFlush(path);
    writeFileSync(path, "written");
    await flush.flush();
    await flush.flush();
    await flush.close();
  });

  test("a file that is not there fails the flush", async () => {
    const flush = fileFlush(join(tempDir("wal-flush"), "missing"));
    await expect(flush.flush()).rejects.toMatchObject({ code: "ENOENT" });
    await flush.close();
  });
});
