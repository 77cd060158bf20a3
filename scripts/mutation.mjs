// `npm run test:mutation -- <part>... [stryker options]`: StrykerJS over each named part (all when none is named), one
// after another; the options from the first one starting with "-" go to Stryker (`--force --mutate file:lines`).
import { spawnSync } from "node:child_process";
import { PARTS } from "./mutation-parts.mjs";

const args = process.argv.slice(2);
const firstOption = args.findIndex((arg) => arg.startsWith("-"));
const names = firstOption < 0 ? args : args.slice(0, firstOption);
const options = firstOption < 0 ? [] : args.slice(firstOption);
const unknown = names.filter((name) => !(name in PARTS));
if (unknown.length > 0) {
  console.error(`unknown part ${unknown.join(", ")}: the parts are ${Object.keys(PARTS).join(", ")}`);
  process.exit(2);
}
let failed = false;
for (const name of names.length > 0 ? names : Object.keys(PARTS)) {
  console.log(`mutation testing: ${name}`);
  const run = spawnSync("npx", ["stryker", "run", "stryker.config.mjs", ...options], { stdio: "inherit", env: { ...process.env, MUTATION_PART: name } });
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
