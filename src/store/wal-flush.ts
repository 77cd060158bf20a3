/**
 * Durable SQLite commits that do not stop the thread. With synchronous=FULL, SQLite flushes its write-ahead log inside
 * COMMIT, and the event loop waits for each fsync: about half a millisecond under load, three times per proof (the
 * id's claim, the notary's ledger, the proof). Here SQLite commits with synchronous=NORMAL (the log written, not
 * flushed) and the log is flushed by libuv's threads; a statement's result is handed out only once a flush that began
 * after every commit made so far has ended. Nobody is answered, or reads, what a power cut could still undo; commits
 * made while a flush runs share the next one.
 */
import { type FileHandle, open } from "node:fs/promises";
import { dirname } from "node:path";
import { AppError } from "../core/errors.ts";

/** How a file is flushed to disk: `flush` once per call, `close` once at the end. */
export interface FileFlush {
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface WalFlush {
  /** Counts a commit just made (its pages written to the log). */
  committed(): void;
  /** Resolves once every commit counted so far is on disk; rejects with `storage_failed` when a flush fails. */
  durable(): Promise<void>;
  /** Waits for a flush under way, then closes the file. */
  close(): Promise<void>;
}

/**
 * fsync of the file at `path`, opened at the first flush (SQLite creates its log at the first write). The first flush
 * also syncs the file's folder, so that the new file's name is on disk too (what SQLite does itself at a new log's
 * first sync).
 */
export function fileFlush(path: string): FileFlush {
  let handle: Promise<FileHandle> | undefined;
  let folderSynced = false;
  return {
    async flush() {
      handle ??= open(path, "r");
      await (await handle).sync();
      if (folderSynced) return;
      const folder = await open(dirname(path), "r");
      try {
        await folder.sync();
        folderSynced = true;
      } finally {
        await folder.close();
      }
    },
    async close() {
      const opened = await handle?.catch(() => undefined);
      await opened?.close();
    },
  };
}

/** At most one flush of `file` runs at a time, and each covers every commit counted before it began. */
export function walFlush(file: FileFlush): WalFlush {
  let commits = 0;
  let onDisk = 0;
  let running: Promise<void> | undefined;
  const flushNow = () => {
    const covers = commits;
    running = file
      .flush()
      .then(
        () => {
          onDisk = Math.max(onDisk, covers);
        },
        (error: unknown) => {
          throw new AppError("storage_failed", `the SQLite log could not be flushed to disk: ${(error as Error).message}`);
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  return {
    committed() {
      commits += 1;
    },
    async durable() {
      const needed = commits;
      // A flush under way may have begun before these commits: then the next one covers them.
      while (onDisk < needed) await (running ?? flushNow());
    },
    async close() {
      await running?.catch(() => undefined);
      await file.close();
    },
  };
}
