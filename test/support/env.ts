import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { makeTlsFixture, type TlsFixture } from "./tls-fixture.ts";

/** Scratch space under the repo (ignored by git), one folder per use. */
export const TMP_ROOT = join(import.meta.dir, "..", "..", ".tmp");

export function scratchDir(name: string): string {
  const dir = join(TMP_ROOT, `${name}-${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** One test CA for the whole run: every engine in this process must trust the same one. */
export const tlsFixture = (): TlsFixture => makeTlsFixture(join(TMP_ROOT, "tls-fixture"));

/** Small sessions keep real MPC tests fast (setup time grows with these sizes). */
export const TEST_SESSION = { maxSentData: 1024, maxRecvData: 2048 };
