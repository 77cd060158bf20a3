/**
 * `cli verify`'s cost on large proofs, this tree against a baseline commit (`--baseline <git ref>`): the baseline's src/ is unpacked into a temporary folder (`git archive`) and both are timed on the same
 * files, in one process (baseline default: main). Prints a table of milliseconds and the ratio baseline ÷ this tree:
 *   - a proof nobody signed (a wrong signature) with N declared spans, N from 16,000 to 100,000: what a verifier
 *     pays for a file an attacker hands it;
 *   - proofs signed by the pinned key: N spans over single hidden bytes (verifyProof, then the JSON report with
 *     what each hidden range covers), and a response with N hidden header values (the report's worst case);
 *   - the growth of this tree's time when N grows ×6.25 (16,000 → 100,000): near 6.25 is linear.
 * Usage: bun scripts/bench-verify.ts [--baseline <git ref>]
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Proof, ProofBody } from "../src/proof/format.ts";
import { generateKey } from "../src/proof/keys.ts";
import { signProof } from "../src/proof/sign.ts";
import { REQUEST, directionHiding, sampleBody } from "../test/proof/fixtures.ts";

const REPO = resolve(import.meta.dir, "..");
const SIZES = [16_000, 32_000, 100_000];
/** Signed proofs stay under this tree's cap (MAX_PROOF_ENTRIES): about 2 entries per hidden value. */
const SIGNED_SIZES = [4_000, 16_000, 32_000];
const RUNS = 3;

interface Verifier {
  verifyProof(input: unknown, pinned: string): unknown;
  report(verified: unknown): unknown;
}

async function verifierAt(root: string): Promise<Verifier> {
  const verify = await import(join(root, "src/proof/verify.ts"));
  const render = await import(join(root, "src/proof/render.ts"));
  return { verifyProof: verify.verifyProof, report: render.verifiedProofJson };
}

function baselineTree(ref: string): { root: string; commit: string; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), "bench-verify-"));
  const commit = execFileSync("git", ["rev-parse", "--short", ref], { cwd: REPO, encoding: "utf8" }).trim();
  execFileSync("sh", ["-c", `git archive ${commit} src package.json | tar -x -C ${root}`], { cwd: REPO });
  symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));
  return { root, commit, remove: () => rmSync(root, { recursive: true, force: true }) };
}

const key = generateKey("secp256k1");
const a = Buffer.from("a").toString("base64");

/** The fixtures' sample proof body, its request revealed whole, with this answer and one redaction of these spans. */
function baseBody(recv: ProofBody["transcript"]["recv"], spans: ProofBody["redactions"][number]["spans"]): ProofBody {
  const sent = directionHiding(REQUEST, []);
  return { ...sampleBody(key), transcript: { sent, recv }, redactions: [{ pattern: "search:b", spans, matched: true }] };
}

/** recv: N single hidden bytes between revealed ones, each declared. */
function alternating(count: number): ProofBody {
  const revealed = Array.from({ length: count + 1 }, (_, i) => ({ start: 2 * i, end: 2 * i + 1, data: a }));
  const spans = Array.from({ length: count }, (_, i) => ({ direction: "recv" as const, start: 2 * i + 1, end: 2 * i + 2 }));
  return baseBody({ length: 2 * count + 1, revealed }, spans);
}

/** recv: an HTTP response with N header fields whose values are hidden, each declared. */
function hiddenHeaders(count: number): ProofBody {
  let text = "HTTP/1.1 200 OK\r\n";
  const hidden: { start: number; end: number }[] = [];
  for (let i = 0; i < count; i++) {
    const line = `x-h${i}: `;
    hidden.push({ start: text.length + line.length, end: text.length + line.length + 4 });
    text += `${line}vvvv\r\n`;
  }
  text += "content-length: 2\r\n\r\n{}";
  const bytes = Buffer.from(text);
  const revealed: ProofBody["transcript"]["recv"]["revealed"] = [];
  let position = 0;
  for (const span of [...hidden, { start: bytes.length, end: bytes.length }]) {
    revealed.push({ start: position, end: span.start, data: bytes.subarray(position, span.start).toString("base64") });
    position = span.end;
  }
  return baseBody({ length: bytes.length, revealed }, hidden.map((span) => ({ direction: "recv" as const, ...span })));
}

/** Median milliseconds of `work`; the verdict is checked to be the expected one. */
function time(work: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    work();
    times.push(performance.now() - started);
  }
  return times.sort((x, y) => x - y)[Math.floor(RUNS / 2)]!;
}

function refusedAsUnsigned(verifier: Verifier, text: string): void {
  try {
    verifier.verifyProof(text, key.publicKeyPem);
  } catch (error) {
    const message = (error as Error).message;
    // The baseline names a body rule or the signature; both are refusals of an unsigned file.
    if (message.startsWith("invalid proof:")) return;
    throw error;
  }
  throw new Error("an unsigned proof verified");
}

const args = process.argv.slice(2);
const ref = args.includes("--baseline") ? (args[args.indexOf("--baseline") + 1] ?? "main") : "main";
const baseline = baselineTree(ref);
try {
  const old = await verifierAt(baseline.root);
  const current = await verifierAt(REPO);
  const rows: string[] = [];
  const row = (what: string, oldMs: number, newMs: number) =>
    rows.push(`| ${what} | ${oldMs.toFixed(1)} ms | ${newMs.toFixed(1)} ms | ${(oldMs / newMs).toFixed(1)}× |`);
  const growth: string[] = [];

  const unsignedNew: number[] = [];
  for (const n of SIZES) {
    const text = JSON.stringify({ version: "tlsproof/1", body: alternating(n), signature: "0".repeat(128) } satisfies Proof);
    const oldMs = time(() => refusedAsUnsigned(old, text));
    const newMs = time(() => refusedAsUnsigned(current, text));
    unsignedNew.push(newMs);
    row(`unsigned, ${n.toLocaleString("en")} spans: refused`, oldMs, newMs);
  }
  growth.push(`unsigned ${SIZES[0]} → ${SIZES.at(-1)} spans: ×${(unsignedNew.at(-1)! / unsignedNew[0]!).toFixed(2)} (size ×${(SIZES.at(-1)! / SIZES[0]!).toFixed(2)})`);

  for (const [name, build] of [["single hidden bytes", alternating], ["hidden header values", hiddenHeaders]] as const) {
    const reportNew: number[] = [];
    for (const n of SIGNED_SIZES) {
      const text = JSON.stringify(signProof(build(n), key));
      row(`signed, ${n.toLocaleString("en")} ${name}: verifyProof`, time(() => old.verifyProof(text, key.publicKeyPem)), time(() => current.verifyProof(text, key.publicKeyPem)));
      const oldReport = time(() => old.report(old.verifyProof(text, key.publicKeyPem)));
      const newReport = time(() => current.report(current.verifyProof(text, key.publicKeyPem)));
      reportNew.push(newReport);
      row(`signed, ${n.toLocaleString("en")} ${name}: verifyProof + JSON report`, oldReport, newReport);
    }
    growth.push(`signed ${name} ${SIGNED_SIZES[0]} → ${SIGNED_SIZES.at(-1)}, with the report: ×${(reportNew.at(-1)! / reportNew[0]!).toFixed(2)} (size ×${(SIGNED_SIZES.at(-1)! / SIGNED_SIZES[0]!).toFixed(2)})`);
  }

  console.log(`baseline ${baseline.commit} vs this tree (median of ${RUNS})\n`);
  console.log("| case | baseline | this tree | baseline ÷ this tree |\n|---|---|---|---|");
  for (const line of rows) console.log(line);
  console.log(`\ngrowth of this tree's time:\n${growth.map((line) => `  ${line}`).join("\n")}`);
} finally {
  baseline.remove();
}
