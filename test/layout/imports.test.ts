import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * The layout's walls, read from the code: every `import ... from` and `export ... from` of src/, resolved to the
 * file it names. The notary is run apart from provers and imports nothing of theirs; the two proof modes of the
 * prover meet only through their seam (src/prover/proving/).
 */
const REPO = resolve(import.meta.dir, "../..");

/** What each file of src/ imports, as paths from the repository root (relative imports only: packages are not ours). */
function importGraph(files: ReadonlyMap<string, string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const statement = /(?:^|[\s;])(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/g;
  for (const [file, text] of files) {
    const targets = [...text.matchAll(statement)]
      .map((match) => match[1] ?? match[2]!)
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => relative(REPO, resolve(REPO, dirname(file), specifier)));
    graph.set(file, targets);
  }
  return graph;
}

/** The imports from files under `from` into files under `to`, as `importer -> imported`. */
function crossings(graph: ReadonlyMap<string, string[]>, from: string, to: string): string[] {
  return [...graph].flatMap(([file, targets]) => (file.startsWith(from) ? targets.filter((target) => target.startsWith(to)).map((target) => `${file} -> ${target}`) : []));
}

function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const path of new Bun.Glob("src/**/*.ts").scanSync(REPO)) files.set(path, readFileSync(join(REPO, path), "utf8"));
  return files;
}

/** Walls that no import may cross: [from, to, why]. */
const WALLS: [string, string, string][] = [
  ["src/notary/", "src/prover/", "the notary is run apart from provers"],
  ["src/prover/mpc/", "src/prover/proxy-mode/", "the proof modes meet only through their seam"],
  ["src/prover/proxy-mode/", "src/prover/mpc/", "the proof modes meet only through their seam"],
  ["src/prover/proving/", "src/prover/mpc/", "the seam knows no mode"],
  ["src/prover/proving/", "src/prover/proxy-mode/", "the seam knows no mode"],
  ["src/notary/mpc/", "src/notary/proxy-mode/", "the notary's modes meet only through their seam"],
  ["src/notary/proxy-mode/", "src/notary/mpc/", "the notary's modes meet only through their seam"],
  ["src/core/", "src/prover/", "the core imports nothing above it"],
  ["src/core/", "src/notary/", "the core imports nothing above it"],
  ["src/base/", "src/core/", "the plumbing imports nothing of the domain"],
  ["src/core/", "src/http/", "the core imports nothing above it"],
  ["src/engine/", "src/protocol/", "the engine needs of a notary only its own interface"],
  ["src/config/", "src/prover/", "reading settings serves every role, side by side"],
  ["src/config/", "src/notary/", "reading settings serves every role, side by side"],
];

describe("the import graph of src/", () => {
  const graph = importGraph(sourceFiles());

  test("is read: the files, and imports whichever way they are written", () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get("src/app/prover.ts")).toContain("src/prover/proving/lifecycle.ts");
    // A multi-line import, a type-only one and an export-from are read too.
    const sample = importGraph(
      new Map([["src/notary/x.ts", 'import {\n  a,\n  b,\n} from "../prover/a.ts";\nimport type { C } from "../prover/c.ts";\nexport { d } from "../prover/d.ts";\nconst e = await import("../prover/e.ts");\n']]),
    );
    expect(crossings(sample, "src/notary/", "src/prover/")).toEqual([
      "src/notary/x.ts -> src/prover/a.ts",
      "src/notary/x.ts -> src/prover/c.ts",
      "src/notary/x.ts -> src/prover/d.ts",
      "src/notary/x.ts -> src/prover/e.ts",
    ]);
  });

  test.each(WALLS)("nothing in %s imports from %s: %s", (from, to) => {
    expect(crossings(graph, from, to)).toEqual([]);
  });
});
