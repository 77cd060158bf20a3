import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * Every link of README.md, BENCHMARKS.md and docs/ that points into this repository leads somewhere: its file
 * exists, and its `#anchor` is a heading of that file, as GitHub makes anchors of headings.
 */
const REPO = resolve(import.meta.dir, "../..");
const DOCUMENTS = ["README.md", "BENCHMARKS.md", ...[...new Bun.Glob("docs/*.md").scanSync(REPO)].sort()];

/** The text outside fenced code blocks. */
const unfenced = (markdown: string): string => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
/** The text outside fenced code blocks and inline code, where links are links. */
const prose = (markdown: string): string => unfenced(markdown).replace(/`[^`\n]*`/g, "``");

/** GitHub's anchor of a heading: lower case, punctuation dropped (not `-` or `_`), spaces as dashes; repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of unfenced(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading!
      .replace(/`([^`]*)`/g, "$1")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The links of a document: `[text](target)` outside code, less those leaving the repository. */
const linksOf = (markdown: string): string[] =>
  [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1]!).filter((target) => !/^[a-z]+:/i.test(target));

/** What is wrong with one link of `document`, or null. */
function problemOf(document: string, target: string): string | null {
  const [path, anchor] = target.split("#", 2) as [string, string | undefined];
  const file = path === "" ? join(REPO, document) : resolve(REPO, dirname(document), path);
  if (!existsSync(file)) return `${relative(REPO, file)} does not exist`;
  if (anchor === undefined || statSync(file).isDirectory()) return null;
  if (!file.endsWith(".md")) return null;
  return anchorsOf(readFileSync(file, "utf8")).has(decodeURIComponent(anchor)) ? null : `${relative(REPO, file)} has no heading #${anchor}`;
}

describe("links within the documentation", () => {
  test("anchors are made as GitHub makes them", () => {
    expect([...anchorsOf("# Proof modes: one seam on each side\n## `cli verify` (offline)\n## Notes\n## Notes\n```\n# not a heading\n```\n")]).toEqual([
      "proof-modes-one-seam-on-each-side",
      "cli-verify-offline",
      "notes",
      "notes-1",
    ]);
    expect(linksOf("[a](docs/x.md#y) `[b](c.md)` [d](https://e.test/f) [g](#h)")).toEqual(["docs/x.md#y", "#h"]);
  });

  test.each(DOCUMENTS)("%s: every link leads to a file, and every anchor to a heading of it", (document) => {
    const problems = linksOf(readFileSync(join(REPO, document), "utf8"))
      .map((target) => [target, problemOf(document, target)] as const)
      .filter(([, problem]) => problem !== null)
      .map(([target, problem]) => `${target}: ${problem}`);
    expect(problems).toEqual([]);
  });
});
