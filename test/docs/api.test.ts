import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isErrorCode } from "../../src/core/errors.ts";
import { ProxyHeaders } from "../../src/prover/call/headers.ts";
import { MPC_HEADERS } from "../../src/prover/mpc/headers.ts";
import { PROXY_MODE_HEADERS } from "../../src/prover/proxy-mode/headers.ts";
import { proxyRoute } from "../../src/prover/call/routes.ts";

/**
 * docs/api.md's `/proxy` tables held against the route's declaration (src/prover/call/): a header row for each header
 * the declaration reads (every mode's, and the built-in modes' own) and no other, and an error row for each code `/proxy` declares it answers.
 */
const api = readFileSync(join(import.meta.dir, "../../docs/api.md"), "utf8");
const section = api.slice(api.indexOf("## `ANY /proxy`"), api.indexOf("## `GET /proof/{requestId}` (SSE)"));
/** The first cell of each row of the table whose header row starts with `first`. */
const firstCells = (first: string): string[] => {
  const start = section.indexOf(`| ${first} |`);
  const rows = section.slice(start).split("\n").slice(2);
  return rows.slice(0, rows.findIndex((row) => !row.startsWith("|"))).map((row) => row.split("|")[1]!.trim());
};

describe("docs/api.md's /proxy tables", () => {
  test("a header row for every header /proxy's declaration reads, and no other", () => {
    const documented = firstCells("header").flatMap((cell) => [...cell.matchAll(/`(T-[A-Z-]+)`/g)].map((m) => m[1]!.toLowerCase()));
    expect(documented.sort()).toEqual([...Object.keys(ProxyHeaders.entries), ...Object.keys(PROXY_MODE_HEADERS.request), ...Object.keys(MPC_HEADERS.request)].sort());
  });

  test("every error code /proxy declares is in its error table; every code there is one", () => {
    const rows = section.slice(section.indexOf("| status | code | when |")).split("\n").slice(2);
    const table = rows.slice(0, rows.findIndex((row) => !row.startsWith("|")));
    const documented = new Set(table.flatMap((row) => [...row.split("|")[2]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!)));
    expect(proxyRoute.errors.filter((code) => !documented.has(code))).toEqual([]);
    expect([...documented].filter((code) => !isErrorCode(code))).toEqual([]);
  });
});
