import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../testkit/env.ts";
import { REPO } from "../../testkit/prover.ts";
import { signedSample } from "../proof/fixtures.ts";

/**
 * The README's commands in a source checkout, where no `cli` is on the PATH: `npm run cli -- <command>` runs any
 * command, the alias the README sets up does too, and `npx bun test` is Bun's test runner (`bun test` alone is not
 * on a fresh machine's PATH).
 */
const run = async (cmd: string[]) => {
  const child = Bun.spawn(cmd, { cwd: REPO, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, exitCode };
};

test("npm run cli -- verify, the README's alias, and npx bun test work from the checkout", async () => {
  const dir = tempDir("checkout");
  const { key, proof } = signedSample();
  writeFileSync(join(dir, "notary.pub"), key.publicKeyPem);
  writeFileSync(join(dir, "proof.json"), JSON.stringify(proof));
  const viaNpm = await run(["npm", "run", "--silent", "cli", "--", "verify", "--notary-pub-key", join(dir, "notary.pub"), "--proof", join(dir, "proof.json")]);
  expect(viaNpm.stderr).toBe("");
  expect(viaNpm.exitCode).toBe(0);
  expect(viaNpm.stdout).toContain("Proof valid: signed by notary key");

  // The alias line exactly as the README writes it, in a shell that expands aliases.
  const alias = /^alias cli=.*$/m.exec(readFileSync(join(REPO, "README.md"), "utf8"))![0];
  const viaAlias = await run(["bash", "-c", `shopt -s expand_aliases\ncd ${REPO}\n${alias}\ncd ${dir}\ncli verify --notary-pub-key notary.pub --proof proof.json`]);
  expect(viaAlias.exitCode).toBe(0);
  expect(viaAlias.stdout).toContain("Proof valid");

  const runner = await run(["npx", "--no-install", "bun", "test", "test/engine/host/engine-log.test.ts"]);
  expect(runner.exitCode).toBe(0);
  expect(runner.stderr).toContain("3 pass");
}, 120_000);
