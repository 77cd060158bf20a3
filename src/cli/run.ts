import { type CommandDef, runCommand, showUsage } from "citty";
import { AppError, exitCodeOf } from "../errors.ts";

/** citty's CLIError, recognised by shape: bad flags, unknown sub-commands. */
const isUsageError = (error: unknown): error is Error =>
  error instanceof Error && error.name === "CLIError";

async function resolveTarget(cmd: CommandDef, rawArgs: string[]): Promise<[CommandDef, CommandDef | undefined]> {
  let current: CommandDef = cmd;
  let parent: CommandDef | undefined;
  for (const arg of rawArgs) {
    if (arg.startsWith("-")) break;
    const subs = typeof current.subCommands === "function" ? await current.subCommands() : await current.subCommands;
    const next = subs?.[arg];
    if (!next) break;
    parent = current;
    current = typeof next === "function" ? await next() : await next;
  }
  return [current, parent];
}

/**
 * Runs the command line. The one place where errors become exit codes: an AppError prints one line
 * `error: <message>` and exits with its code's exit status; usage errors exit 2; nothing prints a stack.
 */
export async function runCli(main: CommandDef, rawArgs: string[]): Promise<void> {
  try {
    if (rawArgs.includes("--help") || rawArgs.includes("-h")) {
      const [cmd, parent] = await resolveTarget(main, rawArgs);
      await showUsage(cmd, parent);
      process.exit(0);
    }
    if (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v")) {
      const meta = typeof main.meta === "function" ? await main.meta() : await main.meta;
      console.log(meta?.version ?? "unknown");
      process.exit(0);
    }
    const [cmd] = await resolveTarget(main, rawArgs);
    if (!cmd.run && cmd.subCommands) throw Object.assign(new Error("missing sub-command"), { name: "CLIError" });
    await runCommand(main, { rawArgs });
    // A command is done when its run resolves (servers resolve after a graceful stop). Exit explicitly:
    // the engine's module keeps a message listener on the global scope, which would hold the process open.
    process.exit(0);
  } catch (error) {
    if (error instanceof AppError) {
      console.error(`error: ${error.message}`);
      process.exit(exitCodeOf(error.code));
    }
    if (isUsageError(error)) {
      const [cmd, parent] = await resolveTarget(main, rawArgs).catch(() => [main, undefined] as const);
      await showUsage(cmd, parent);
      console.error(`error: ${error.message}`);
      process.exit(2);
    }
    console.error(`error: ${(error as Error)?.message ?? String(error)}`);
    process.exit(1);
  }
}
