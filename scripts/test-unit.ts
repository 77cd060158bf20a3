/**
 * `npm run test:unit`: the files that start no server process, MPC session, browser or cluster, two at a time, each
 * worker keeping one global and module registry across its files (`--no-isolate`: 30 s instead of 37-39 s on 2
 * cores, CPU-bound either way), and one PostgreSQL cluster for them all, started here: a worker's files share one
 * module registry, so a cluster its first file started and stopped would be gone for the next. `npm test` still runs
 * every file in a fresh global. Arguments go to `bun test` (`npm run test:unit -- test/store`).
 */
import { withTestPostgres } from "../testkit/postgres.ts";

const UNIT = [
  "--timeout", "60000", "--parallel=2", "--no-isolate",
  "--path-ignore-patterns=**/*.e2e.test.ts",
  "--path-ignore-patterns=**/*.process.test.ts",
  "--path-ignore-patterns=**/*.browser.test.ts",
  "--path-ignore-patterns=test/deploy/**",
];

const code = await withTestPostgres(() => Bun.spawn([process.execPath, "test", ...UNIT, ...process.argv.slice(2)], { stdio: ["inherit", "inherit", "inherit"], env: process.env }).exited);
process.exit(code);
