import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { configSchema, parseNotaryConfig } from "../../src/notary/config.ts";
import { PROVER_VARIABLES, proverSettings } from "../../src/prover/config.ts";
import { REPO } from "../../testkit/prover.ts";

/**
 * The settings as the docs state them and as the code reads them, held together: every `PROVER_*` name the prover
 * accepts has its row in docs/prover.md's tables and every row names one it accepts; docs/notary.md's YAML sample is a
 * config the notary accepts, holding every key it reads.
 */
const doc = (name: string) => readFileSync(join(REPO, "docs", name), "utf8");

/** Every key path of a YAML mapping: `proxy.enabled`, `ledger.path`, … (a section's own name too). */
function keyPaths(value: unknown, prefix = ""): string[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, inner]) => [`${prefix}${key}`, ...keyPaths(inner, `${prefix}${key}.`)]);
}

/** The key paths a valibot schema of mappings reads, through optional and nullish wrappers and pipes. */
function schemaKeyPaths(schema: unknown, prefix = ""): string[] {
  const node = schema as { wrapped?: unknown; pipe?: unknown[]; entries?: Record<string, unknown>; type?: string };
  if (node.wrapped !== undefined) return schemaKeyPaths(node.wrapped, prefix);
  if (node.pipe !== undefined) return node.pipe.flatMap((item) => schemaKeyPaths(item, prefix));
  if (node.entries === undefined || node.type === "array") return [];
  return Object.entries(node.entries).flatMap(([key, inner]) => [`${prefix}${key}`, ...schemaKeyPaths(inner, `${prefix}${key}.`)]);
}

describe("settings, documented as read", () => {
  test("docs/prover.md has a row for every PROVER_* name the prover reads, and no other", () => {
    const rows = [...doc("prover.md").matchAll(/^\| (`PROVER_[A-Z0-9_]+`(?: \/ `PROVER_[A-Z0-9_]+`)*) \|/gm)].flatMap((match) => [...match[1]!.matchAll(/PROVER_[A-Z0-9_]+/g)].map((name) => name[0]));
    // The suite's own database URL is read by the tests, never by the prover: docs/testing.md has it.
    const read = PROVER_VARIABLES.filter((name) => name !== "PROVER_TEST_PG_URL");
    expect([...new Set(rows)].sort()).toEqual([...new Set(read)].sort());
    expect(doc("testing.md")).toContain("PROVER_TEST_PG_URL");
  });

  test("each default docs/prover.md states is the one the prover's schema holds", () => {
    const defaults = new Map(proverSettings().map((setting) => [setting.name, setting.default]));
    const rows = [...doc("prover.md").matchAll(/^\| (`PROVER_[A-Z0-9_]+`(?: \/ `PROVER_[A-Z0-9_]+`)*) \| ([^|]*) \|/gm)];
    const wrong: string[] = [];
    for (const [, namesCell, defaultCell] of rows) {
      const names = [...namesCell!.matchAll(/PROVER_[A-Z0-9_]+/g)].map((name) => name[0]);
      const cell = defaultCell!.trim();
      // `value`, or `value` / `value` for a row of two settings, each perhaps explained in parentheses.
      const literal = /^`([^`]+)`(?: \/ `([^`]+)`)?(?: \(.*\))?$/.exec(cell);
      const stated = literal && !literal[1]!.startsWith("PROVER_") ? [literal[1], literal[2]] : [];
      names.forEach((name, i) => {
        // "unset", "any", or a default computed at start (cores, memory, another setting): none in the schema. A second
        // name without a value of its own is the setting's former name, which has none either.
        const expected = stated[i];
        const actual = defaults.get(name) || undefined;
        if (expected !== actual) wrong.push(`${name}: docs say ${cell}, the schema ${actual ?? "none"}`);
      });
    }
    expect(rows.length).toBeGreaterThan(50);
    expect(wrong).toEqual([]);
  });

  test("docs/notary.md's YAML sample is a config the notary accepts, with every key it reads", () => {
    const sample = /```yaml\n([\s\S]*?)```/.exec(doc("notary.md"))![1]!;
    const parsed = parseYaml(sample) as Record<string, unknown>;
    // Accepted as written (the schema is strict: a key the code does not read stops start-up).
    expect(() => parseNotaryConfig(parsed, "/etc/tlsproof")).not.toThrow();
    // And every key the schema reads is in it.
    expect(keyPaths(parsed).sort()).toEqual(schemaKeyPaths(configSchema).sort());
  });
});

describe("prover start --help", () => {
  test("names every setting the prover reads, with its default where it has one, and no former name", async () => {
    const { default: prover } = await import("../../src/cli/prover.ts");
    const start = (prover.subCommands as Record<string, { meta: { description: string } }>).start!;
    const help = start.meta.description;
    const named = new Set(help.match(/PROVER_[A-Z0-9_]+/g));
    const former = PROVER_VARIABLES.filter((name) => /_(S|MS)$/.test(name));
    expect(former.length).toBe(12);
    for (const name of PROVER_VARIABLES.filter((name) => name !== "PROVER_TEST_PG_URL" && !former.includes(name))) expect(named.has(name)).toBe(true);
    for (const name of former) expect(named.has(name)).toBe(false);
    expect(help).toContain("PROVER_PORT=8080");
    expect(help).toContain("PROVER_PROOF_MODE=mpc");
    expect(help).toContain("PROVER_ALLOWED_PORTS=443,8443");
    // No default: the bare name, never `NAME=`.
    expect(help).not.toContain("PROVER_NOTARY_KEYS=");
  });
});
