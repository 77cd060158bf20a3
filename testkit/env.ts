import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeTlsFixture, type TlsFixture } from "./tls-fixture.ts";

/** Scratch space under the repo (ignored by git), one folder per use. */
export const TMP_ROOT = join(import.meta.dir, "..", ".tmp");

/** Folders made by `scratchDir` and `tempDir`: removed once every test file has run (testkit/cleanup.ts). */
const made: string[] = [];
const removedAtEnd = (dir: string): string => (made.push(dir), dir);

/** Removes the folders this run made: a run leaves nothing behind. */
export function removeMadeFolders(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A fresh folder under .tmp/ in the repo, for a process the test starts (its data, its config). */
export function scratchDir(name: string): string {
  mkdirSync(TMP_ROOT, { recursive: true });
  return removedAtEnd(mkdtempSync(join(TMP_ROOT, `${name}-`)));
}

/** A fresh folder in the system's temporary folder (`tlsproof-<what>-…`). */
export const tempDir = (what = "test"): string => removedAtEnd(mkdtempSync(join(tmpdir(), `tlsproof-${what}-`)));

/** One test CA for the whole run: every engine in this process must trust the same one. */
export const tlsFixture = (): TlsFixture => makeTlsFixture(join(TMP_ROOT, "tls-fixture"));

/** Small sessions keep real MPC tests fast (setup time grows with these sizes). */
export const TEST_SESSION = { maxSentData: 1024, maxRecvData: 2048 };
