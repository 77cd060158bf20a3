import { describe, expect, test } from "bun:test";
import { cliInProcess } from "../../testkit/cli-in-process.ts";
import { SOURCE_CLI, runCli } from "../../testkit/prover.ts";

/** `cli engine-host` is the prover's own child process; users neither see it nor can start it alone. */
describe("cli engine-host", () => {
  test("run by hand (no parent channel): exit 2 with one readable line", async () => {
    const { exitCode, stdout, stderr } = await runCli(SOURCE_CLI, ["engine-host"]);
    expect(exitCode).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim()).toBe("error: cli engine-host runs only as a child process of cli prover start");
  });

  test("hidden from help and from completion", async () => {
    expect((await cliInProcess(["--help"])).stdout).not.toContain("engine-host");
    const { stdout } = await runCli(SOURCE_CLI, ["complete", "--", ""]);
    expect(stdout).toContain("prover");
    expect(stdout).not.toContain("engine-host");
  });
});
