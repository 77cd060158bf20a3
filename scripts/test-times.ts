/**
 * Where the suite's time goes: every file `npm test` runs, each in its own `bun test` process, so that a file's
 * wall time includes its set-up hooks and process start. One PostgreSQL cluster serves them all (started here,
 * testkit/postgres.ts). Prints the files by time, slowest first, and the total; exits 1 when a file failed.
 *
 *   npm run test:times [-- <file filter>...]
 */
import { Glob } from "bun";
import { withTestPostgres } from "../testkit/postgres.ts";

interface FileRun {
  file: string;
  seconds: number;
  ok: boolean;
}

async function runFile(file: string): Promise<FileRun> {
  const started = performance.now();
  // Bun gives a test 5 s unless told; `npm test` gives 60 s (MPC tests set longer ones).
  const child = Bun.spawn([process.execPath, "test", "--timeout", "60000", `./${file}`], { stdout: "inherit", stderr: "inherit" });
  const ok = (await child.exited) === 0;
  return { file, seconds: (performance.now() - started) / 1000, ok };
}

const filters = process.argv.slice(2);
const files = [...new Glob("test/**/*.test.ts").scanSync()].filter((file) => filters.length === 0 || filters.some((filter) => file.includes(filter))).sort();
if (files.length === 0) {
  console.error(`no test file matches ${filters.join(" ")}`);
  process.exit(2);
}
// One cluster for the whole pass, shared by every file's process.
const runs: FileRun[] = [];
await withTestPostgres(async () => {
  for (const file of files) runs.push(await runFile(file));
});
console.log("test files by wall time (seconds):");
for (const run of [...runs].sort((a, b) => b.seconds - a.seconds)) console.log(`${run.seconds.toFixed(1).padStart(7)} ${run.file}${run.ok ? "" : "  FAILED"}`);
const failed = runs.filter((run) => !run.ok);
console.log(`all files: ${runs.reduce((sum, run) => sum + run.seconds, 0).toFixed(0)} s over ${runs.length} files; ${failed.length} failed`);
process.exit(failed.length === 0 ? 0 : 1);
