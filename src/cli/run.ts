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
 * The first option the command does not define, as written, or undefined. citty ignores unknown options, so
 * a script passing a check the command does not have (`cli verify --request-id X`) would believe it ran.
 * The values of string options are skipped (`--proof -`); `--no-<flag>` negates a boolean flag.
 */
export async function unknownOption(cmd: CommandDef, rawArgs: readonly string[]): Promise<string | undefined> {
  const defs = (typeof cmd.args === "function" ? await cmd.args() : await cmd.args) ?? {};
  const known = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") continue;
    known.set(name, def.type ?? "string");
    const aliases = "alias" in def && def.alias !== undefined ? [def.alias].flat() : [];
    for (const alias of aliases) known.set(alias, def.type ?? "string");
    if (def.type === "boolean") known.set(`no-${name}`, "boolean");
  }
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i] as string;
    if (arg === "--") return undefined;
    if (!arg.startsWith("-") || arg === "-") continue;
    const [name = "", value] = arg.replace(/^--?/, "").split("=", 2);
    const type = known.get(name);
    if (type === undefined) return arg.split("=", 1)[0];
    if (type !== "boolean" && value === undefined) i++;
  }
  return undefined;
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
    const unknown = await unknownOption(cmd, rawArgs);
    if (unknown !== undefined) throw new AppError("usage", `unknown option ${unknown}`);
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
