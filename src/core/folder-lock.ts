/**
 * One process per data folder: a second prover on a folder another live process holds would settle that one's
 * pending request ids as failed and write into its store and key files. The lock is a file holding the holder's pid,
 * made exclusively (O_EXCL); one left by a process that is gone (killed, crashed) is taken over. A pid reused since by
 * another process reads as a live holder: the message names the file, which its operator may then remove.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "./errors.ts";
import { makePrivateDir } from "../base/private-files.ts";

export const LOCK_FILE = "prover.lock";

export interface FolderLock {
  /** Removes the lock file, if it is still this process's. */
  release(): void;
}

/** The pid a lock file names, or undefined when it names none (being written, or not a lock). */
function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid runs (one of another user's counts: it exists). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function tryCreate(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Takes `dir` (made 0700 if missing) for this process, or throws data_dir_in_use naming the process that holds it. */
export function lockFolder(dir: string, setting: string): FolderLock {
  makePrivateDir(dir);
  const path = join(dir, LOCK_FILE);
  const release = () => {
    if (holderOf(path) === process.pid) rmSync(path, { force: true });
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    if (tryCreate(path)) return { release };
    const holder = holderOf(path);
    if (holder === undefined || isRunning(holder)) {
      const who = holder === undefined ? "another process" : `process ${holder}${holder === process.pid ? " (this one)" : ""}`;
      throw new AppError("data_dir_in_use", `the data folder ${dir} is in use by ${who} (its lock file ${path}): stop it first, or give this prover another folder (${setting})`);
    }
    // Its holder is gone: the lock is stale.
    rmSync(path, { force: true });
  }
  throw new AppError("data_dir_in_use", `the data folder ${dir} was locked again while this prover took it over (its lock file ${path})`);
}
