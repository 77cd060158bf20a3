import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensurePrivateFile, makePrivateDir } from "../../src/base/private-files.ts";
import { tempDir } from "../../testkit/env.ts";

const modeOf = (path: string): number => statSync(path).mode & 0o777;

/** Under umask 000 every mode given to mkdir and open is kept as given: the worst case for a careless caller. */
let umask: number;
beforeEach(() => {
  umask = process.umask(0);
});
afterEach(() => {
  process.umask(umask);
});

describe("private folders and files", () => {
  test("every folder made is 0700, the parents made on the way too; a folder that existed keeps its mode", () => {
    const root = tempDir("private");
    mkdirSync(join(root, "existing"), { mode: 0o755 });
    makePrivateDir(join(root, "existing", "a", "b"));
    expect(modeOf(join(root, "existing"))).toBe(0o755);
    expect(modeOf(join(root, "existing", "a"))).toBe(0o700);
    expect(modeOf(join(root, "existing", "a", "b"))).toBe(0o700);
    // Made again: nothing changes, nothing fails.
    makePrivateDir(join(root, "existing", "a", "b"));
    expect(modeOf(join(root, "existing", "a", "b"))).toBe(0o700);
  });

  test("a file made is 0600 and empty; an existing one is left as it is", () => {
    const root = tempDir("private");
    ensurePrivateFile(join(root, "store"));
    expect(modeOf(join(root, "store"))).toBe(0o600);
    expect(statSync(join(root, "store")).size).toBe(0);
    writeFileSync(join(root, "kept"), "data", { mode: 0o640 });
    ensurePrivateFile(join(root, "kept"));
    expect(modeOf(join(root, "kept"))).toBe(0o640);
    expect(statSync(join(root, "kept")).size).toBe(4);
  });
});
