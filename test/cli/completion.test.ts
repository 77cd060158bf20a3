import { describe, expect, test } from "bun:test";
import { SOURCE_CLI, runCli } from "../../testkit/prover.ts";

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

  test("cli --help lists every user command, complete included, and writes no colour codes into a pipe", async () => {
    const { exitCode, stdout } = await runCli(SOURCE_CLI, ["--help"]);
    expect(exitCode).toBe(0);
    for (const command of ["prover", "notary", "verify", "complete"]) expect(stdout).toMatch(new RegExp(`^\\s*${command}\\s`, "m"));
    expect(stdout).not.toContain("\u001b[");
  });
});
