import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SOURCE_CLI, runCli } from "../../testkit/prover.ts";
import { tempDir } from "../../testkit/env.ts";

/** Shell completion through the real command line: the scripts, and the candidates they ask `cli` for. */
describe("cli complete", () => {
  test("prints a completion script for bash, zsh and fish that asks cli for its candidates", async () => {
    for (const [shell, registers] of [["bash", "complete -F __cli_complete cli"], ["zsh", "#compdef cli"], ["fish", "complete -c cli"]] as const) {
      const { exitCode, stdout } = await runCli(SOURCE_CLI, ["complete", shell]);
      expect(exitCode).toBe(0);
      expect(stdout).toContain(registers);
      expect(stdout).toContain("complete --");
    }
  });

  test("candidates: sub-commands, nested sub-commands and a command's flags", async () => {
    const candidates = async (...words: string[]) => {
      const { exitCode, stdout } = await runCli(SOURCE_CLI, ["complete", "--", ...words]);
      expect(exitCode).toBe(0);
      return stdout.split("\n").map((line) => line.split("\t")[0]);
    };
    expect(await candidates("")).toEqual(expect.arrayContaining(["prover", "notary", "verify"]));
    expect(await candidates("notary", "")).toEqual(expect.arrayContaining(["start", "keygen"]));
    expect(await candidates("verify", "--")).toEqual(expect.arrayContaining(["--notary-pub-key", "--proof", "--json"]));
  });

  test("candidates: the values of enum flags, and paths for flags taking a file or a folder", async () => {
    const candidates = async (...words: string[]) => {
      const { exitCode, stdout } = await runCli(SOURCE_CLI, ["complete", "--", ...words]);
      expect(exitCode).toBe(0);
      return stdout.split("\n").filter((line) => line !== "" && !line.startsWith(":")).map((line) => line.split("\t")[0]);
    };
    expect(await candidates("prove", "--mode", "")).toEqual(["mpc", "proxy"]);
    expect(await candidates("notary", "keygen", "--algorithm", "")).toEqual(["secp256k1", "secp256r1"]);
    const dir = tempDir("completion");
    mkdirSync(join(dir, "keys"));
    for (const file of ["proof-a.json", "proof-b.json", "notes.txt", ".hidden"]) writeFileSync(join(dir, file), "");
    expect(await candidates("verify", "--proof", join(dir, "pro"))).toEqual([join(dir, "proof-a.json"), join(dir, "proof-b.json")]);
    // After a boolean flag, and from the folder's own path: every entry but hidden ones, folders with a slash.
    expect(await candidates("verify", "--json", "--notary-pub-key", `${dir}/`)).toEqual([`${dir}/keys/`, `${dir}/notes.txt`, `${dir}/proof-a.json`, `${dir}/proof-b.json`]);
    // A flag taking a folder lists folders only.
    expect(await candidates("notary", "keygen", "--out", `${dir}/`)).toEqual([`${dir}/keys/`]);
    // A flag taking free text lists nothing, rather than commands.
    expect(await candidates("verify", "--server-name", "")).toEqual([]);
  }, 60_000);

  test("cli --help lists every user command, complete included, and writes no colour codes into a pipe", async () => {
    const { exitCode, stdout } = await runCli(SOURCE_CLI, ["--help"]);
    expect(exitCode).toBe(0);
    for (const command of ["prover", "notary", "verify", "complete"]) expect(stdout).toMatch(new RegExp(`^\\s*${command}\\s`, "m"));
    expect(stdout).not.toContain("\u001b[");
  });
});
