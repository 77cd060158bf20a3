/**
 * Folders and files that hold keys, proofs or a store are the operator's alone: every folder made here is 0700 and
 * a store file 0600, whatever the umask (mkdir and open apply the umask to the mode they are given, so the mode is
 * set again once made). A folder that already existed keeps the mode its owner gave it.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Makes `dir` and any missing parents, each 0700. */
export function makePrivateDir(dir: string): void {
  const target = resolve(dir);
  const first = mkdirSync(target, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  // From the deepest folder made up to the first one made: each is ours, none existed before.
  for (let made = target; ; made = dirname(made)) {
    chmodSync(made, 0o700);
    if (made === resolve(first)) break;
  }
}

/** Creates `path` empty and 0600 if it is missing; an existing file is left as it is. */
export function ensurePrivateFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return;
    throw error;
  }
  try {
    chmodSync(path, 0o600);
  } finally {
    closeSync(fd);
  }
}
