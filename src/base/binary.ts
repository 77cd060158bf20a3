/**
 * Whether this code runs from sources or inside the compiled binary, and where a worker thread's entry module is in
 * each: the binary holds every module under Bun's virtual root, at its path from the project's root, and only the
 * entries scripts/build.ts lists become modules of their own there.
 */
export const IN_BINARY = import.meta.url.includes("/$bunfs/");

// Every chunk of the binary imports this module from the same root, so the root is read from its own URL.
const BINARY_ROOT = IN_BINARY ? import.meta.url.slice(0, import.meta.url.indexOf("/$bunfs/root/") + "/$bunfs/root/".length) : "";

/**
 * The URL a Worker starts `pathFromRoot` (a .ts file, listed as an entry in scripts/build.ts) from: the file itself
 * from sources, its built .js in the binary.
 */
export function threadEntryUrl(pathFromRoot: string): string {
  if (IN_BINARY) return new URL(pathFromRoot.replace(/\.ts$/, ".js"), BINARY_ROOT).href;
  return new URL(`../../${pathFromRoot}`, import.meta.url).href;
}
