/**
 * A command line run in this process, its output into buffers: what the process would have written and the exit
 * status runCli answers (test/cli/run.test.ts runs the entry as a process too: real exit codes, pipes and stdin).
 */
import type { CliIo, CliOutput } from "../src/cli/io.ts";
import { runCommandLine } from "../src/cli/main.ts";
import type { CliResult } from "./prover.ts";

export async function runInProcess(run: (io: CliIo) => Promise<number>, stdin = ""): Promise<CliResult> {
  const written = { stdout: "", stderr: "" };
  const buffer = (name: keyof typeof written): CliOutput => ({ write: async (text) => (written[name] += text) });
  const exitCode = await run({ stdout: buffer("stdout"), stderr: buffer("stderr"), readStdin: async () => stdin });
  return { ...written, exitCode };
}

/** `cli <args>` in this process. */
export const cliInProcess = (args: string[], stdin?: string): Promise<CliResult> => runInProcess((io) => runCommandLine(args, io), stdin);
