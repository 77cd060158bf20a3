// `npm run test:mutation -- <part>...`: StrykerJS over each named part (all when none is named), one after another.
import { spawnSync } from "node:child_process";
import { PARTS } from "./mutation-parts.mjs";

const names = process.argv.slice(2);
const unknown = names.filter((name) => !(name in PARTS));
if (unknown.length > 0) {
  console.error(`unknown part ${unknown.join(", ")}: the parts are ${Object.keys(PARTS).join(", ")}`);
  process.exit(2);
}
let failed = false;
for (const name of names.length > 0 ? names : Object.keys(PARTS)) {
  console.log(`mutation testing: ${name}`);
  const run = spawnSync("npx", ["stryker", "run", "stryker.config.mjs"], { stdio: "inherit", env: { ...process.env, MUTATION_PART: name } });
  if (run.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
