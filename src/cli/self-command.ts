/**
 * The words that run this command line again, as a printed command must start so that it runs where it is printed:
 * the compiled binary as `cli` when that name on the PATH is this binary, else by its path; from a source checkout,
 * where no `cli` is on the PATH, its Bun and its index.ts by their paths (what the README's alias runs).
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { IN_BINARY } from "../base/binary.ts";

/** A word as a POSIX shell reads it back unchanged. */
export const shellQuoted = (value: string): string => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`);

const realPath = (path: string): string => {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
};

export function selfCommand(): string {
  if (IN_BINARY) {
    const onPath = Bun.which("cli");
    return onPath && realPath(onPath) === realPath(process.execPath) ? "cli" : shellQuoted(process.execPath);
  }
  return `${shellQuoted(process.execPath)} ${shellQuoted(fileURLToPath(new URL("../../index.ts", import.meta.url)))}`;
}
