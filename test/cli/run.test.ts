import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cliInProcess } from "../../testkit/cli-in-process.ts";
import { SOURCE_CLI, runCli } from "../../testkit/prover.ts";
import { signedSample, tempDir } from "../proof/fixtures.ts";

/** Help through the command line's run (src/cli/main.ts, in process): decided on the parsed words, never on a value. */
const dir = tempDir();
const { key, proof } = signedSample();
const pubPath = join(dir, "notary.pub");
const proofPath = join(dir, "proof.json");
writeFileSync(pubPath, key.publicKeyPem);
writeFileSync(proofPath, JSON.stringify(proof));
const verifyArgs = ["verify", "--notary-pub-key", pubPath, "--proof", proofPath];

const cli = (...args: string[]) => cliInProcess(args);

function expectOneErrorLine(stderr: string, line: string): void {
  expect(stderr.trimEnd().split("\n")).toEqual([line]);
}

describe("cli help", () => {
  test("alone, -h or --help prints the command's usage and exits 0", async () => {
    for (const flag of ["--help", "-h"]) {
      const { exitCode, stdout, stderr } = await cli("verify", flag);
      expect(exitCode).toBe(0);
      expect(stdout).toContain("USAGE cli verify");
      expect(stderr).toBe("");
    }
    const nested = await cli("notary", "keygen", "--help");
    expect(nested.exitCode).toBe(0);
    expect(nested.stdout).toContain("--out");
  });

  test("fitted to 100 columns off a terminal: no trailing padding, long descriptions wrapped under themselves", async () => {
    for (const command of [["verify"], ["prove"], ["prover", "start"], ["notary", "start"], []]) {
      const { stdout } = await cli(...command, "--help");
      const lines = stdout.trimEnd().split("\n");
      expect(lines.filter((line) => line.length > 100)).toEqual([]);
      expect(lines.filter((line) => line !== line.trimEnd())).toEqual([]);
    }
    const { stdout } = await cli("verify", "--help");
    const first = stdout.split("\n").findIndex((line) => line.includes("--notary-pub-key=<file>"));
    const column = stdout.split("\n")[first]!.indexOf("The notary's public key");
    const next = stdout.split("\n")[first + 1]!;
    expect(next.slice(0, column).trim()).toBe("");
    expect(next[column]).not.toBe(" ");
  });

  test("a usage error prints the usage and the error to stderr, nothing to stdout, exit 2", async () => {
    const { exitCode, stdout, stderr } = await cli("verify", "--proof", proofPath);
    expect(exitCode).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain("USAGE cli verify");
    expect(stderr.trimEnd().split("\n").at(-1)).toBe("error: Missing required argument: --notary-pub-key");
  });

  test("in an option's value position it is that option's value: an expectation of -h is not met (exit 1)", async () => {
    const server = await cli(...verifyArgs, "--server-name", "-h");
    expect(server.exitCode).toBe(1);
    expect(server.stdout).toBe("");
    expectOneErrorLine(server.stderr, `error: the proof is of server ${proof.body.serverName}, expected -h`);
    const requestId = await cli(...verifyArgs, "--request-id", "--help");
    expect(requestId.exitCode).toBe(1);
    expectOneErrorLine(requestId.stderr, `error: the proof is of request id ${proof.body.requestId}, expected --help`);
    const proofFile = await cli("verify", "--notary-pub-key", pubPath, "--proof", "-h");
    expect(proofFile.exitCode).toBe(2);
    expect(proofFile.stderr).toStartWith("error: cannot read proof file -h: ENOENT");
  });

  test("mixed with other arguments: exit 2 with one line, and the command does not run", async () => {
    for (const flag of ["--help", "-h"]) {
      const { exitCode, stdout, stderr } = await cli(...verifyArgs, flag);
      expect(exitCode).toBe(2);
      expect(stdout).toBe("");
      expectOneErrorLine(stderr, `error: ${flag} takes no other arguments (run \`cli verify --help\` alone for usage)`);
    }
    // After a boolean flag, -h is a flag again, not a value.
    expect((await cli(...verifyArgs, "--json", "-h")).exitCode).toBe(2);
    const keys = join(dir, "keys");
    const keygen = await cli("notary", "keygen", "--out", keys, "--help");
    expect(keygen.exitCode).toBe(2);
    expectOneErrorLine(keygen.stderr, "error: --help takes no other arguments (run `cli notary keygen --help` alone for usage)");
    expect(existsSync(keys)).toBe(false);
  });
});

/** The entry as a process (`bun index.ts …`), its own streams (src/cli/io.ts): the other cli tests run in process. */
describe("cli as a process", () => {
  test("a proof read from the process's stdin, the report on its stdout, exit 0", async () => {
    const { exitCode, stdout, stderr } = await runCli(SOURCE_CLI, ["verify", "--notary-pub-key", pubPath, "--proof", "-", "--json"], JSON.stringify(proof));
    expect(stderr).toBe("");
    expect(exitCode).toBe(0);
    expect(JSON.parse(stdout).requestId).toBe(proof.body.requestId);
  });

  test("the exit status runCli answers is the process's: 1 for a proof not of the expected server, 2 for a usage error", async () => {
    const mismatch = await runCli(SOURCE_CLI, [...verifyArgs, "--server-name", "other.example"]);
    expect(mismatch.exitCode).toBe(1);
    expect(mismatch.stdout).toBe("");
    expectOneErrorLine(mismatch.stderr, `error: the proof is of server ${proof.body.serverName}, expected other.example`);
    const usage = await runCli(SOURCE_CLI, ["verify", "--proof", proofPath]);
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr.trimEnd().split("\n").at(-1)).toBe("error: Missing required argument: --notary-pub-key");
  });
});
