import { type CommandDef, runCommand } from "citty";
import { AppError, exitCodeOf } from "../core/errors.ts";
import { terminalLine } from "../base/terminal-text.ts";
import { usageFor } from "./usage-text.ts";
import { type CliIo, type CliOutput, processIo, withCliIo } from "./io.ts";

/** An error's one line: its message may hold a proof file's or a prover's text, so nothing in it acts on a terminal. */
const errorLine = (message: string): string => terminalLine(`error: ${message}`);

/** citty's CLIError, recognised by shape: bad flags, unknown sub-commands. */
const isUsageError = (error: unknown): error is Error =>
  error instanceof Error && error.name === "CLIError";

const HELP_FLAGS = new Set(["-h", "--help"]);

/** The command `rawArgs` names, its parent, and how many leading words named it (`prover start`: 2). */
async function resolveTarget(cmd: CommandDef, rawArgs: readonly string[]): Promise<[CommandDef, CommandDef | undefined, number]> {
  let current: CommandDef = cmd;
  let parent: CommandDef | undefined;
  let depth = 0;
  for (const arg of rawArgs) {
    if (arg.startsWith("-")) break;
    const subs = typeof current.subCommands === "function" ? await current.subCommands() : await current.subCommands;
    const next = subs?.[arg];
    if (!next) break;
    parent = current;
    current = typeof next === "function" ? await next() : await next;
    depth += 1;
  }
  return [current, parent, depth];
}

/** One word of a command's arguments, as the command's definitions read it. */
type Word = { kind: "option"; text: string; type: string | undefined } | { kind: "value" | "other"; text: string };

/**
 * The words after the command's name, classified by its definitions: an option (its type, undefined when the
 * command does not define it), the value of the string option before it (even when it starts with a dash:
 * `--server-name -h` names the server "-h"), or anything else (positionals, and all after `--`).
 */
async function commandWords(cmd: CommandDef, args: readonly string[]): Promise<Word[]> {
  const defs = (typeof cmd.args === "function" ? await cmd.args() : await cmd.args) ?? {};
  const known = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) {
    if (def.type === "positional") continue;
    known.set(name, def.type ?? "string");
    const aliases = "alias" in def && def.alias !== undefined ? [def.alias].flat() : [];
    for (const alias of aliases) known.set(alias, def.type ?? "string");
    if (def.type === "boolean") known.set(`no-${name}`, "boolean");
  }
  const words: Word[] = [];
  for (let i = 0; i < args.length; i++) {
    const text = args[i] as string;
    if (text === "--") {
      words.push(...args.slice(i).map((rest) => ({ kind: "other" as const, text: rest })));
      break;
    }
    if (!text.startsWith("-") || text === "-") {
      words.push({ kind: "other", text });
      continue;
    }
    const [name = "", value] = text.replace(/^--?/, "").split("=", 2);
    const type = known.get(name);
    words.push({ kind: "option", text, type });
    if (type !== undefined && type !== "boolean" && value === undefined && i + 1 < args.length) words.push({ kind: "value", text: args[++i] as string });
  }
  return words;
}

/**
 * The first option the command does not define, as written, or undefined. citty ignores unknown options, so
 * a script passing a check the command does not have (`cli verify --request-id X`) would believe it ran.
 */
function unknownOption(words: readonly Word[]): string | undefined {
  const unknown = words.find((word) => word.kind === "option" && word.type === undefined);
  return unknown?.text.split("=", 1)[0];
}

/**
 * Whether to print usage, decided on the parsed words: only when -h/--help stands alone. Mixed with other
 * arguments it is refused (exit 2): a script whose attacker-supplied value lands in an option's place must
 * not read "exit 0" as success.
 */
function helpAsked(words: readonly Word[], commandName: string): boolean {
  const isHelp = (word: Word) => word.kind === "option" && HELP_FLAGS.has(word.text);
  const help = words.find(isHelp);
  if (!help) return false;
  if (words.every(isHelp)) return true;
  throw new AppError("usage", `${help.text} takes no other arguments (run \`${commandName} --help\` alone for usage)`);
}

/**
 * Runs the command line and answers its exit status: the one place where errors become exit codes. An AppError
 * prints one line `error: <message>` and exits with its code's exit status; usage errors exit 2; nothing prints a
 * stack. Output goes to `io` (the process's streams unless a test gives others).
 */
export function runCli(main: CommandDef, rawArgs: string[], io: CliIo = processIo): Promise<number> {
  return withCliIo(io, () => statusOf(main, rawArgs, io));
}

async function statusOf(main: CommandDef, rawArgs: string[], io: CliIo): Promise<number> {
  const printLine = (output: CliOutput, text: string) => output.write(`${text}\n`);
  try {
    const [cmd, parent, depth] = await resolveTarget(main, rawArgs);
    const words = await commandWords(cmd, rawArgs.slice(depth));
    const mainMeta = typeof main.meta === "function" ? await main.meta() : await main.meta;
    if (helpAsked(words, [mainMeta?.name ?? "cli", ...rawArgs.slice(0, depth)].join(" "))) {
      await printLine(io.stdout, await usageFor(cmd, parent, io.stdout));
      return 0;
    }
    if (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v")) {
      await printLine(io.stdout, mainMeta?.version ?? "unknown");
      return 0;
    }
    if (!cmd.run && cmd.subCommands) throw Object.assign(new Error("missing sub-command"), { name: "CLIError" });
    const unknown = unknownOption(words);
    if (unknown !== undefined) throw new AppError("usage", `unknown option ${unknown}`);
    // A command is done when its run resolves (servers resolve after a graceful stop).
    await runCommand(main, { rawArgs });
    return 0;
  } catch (error) {
    if (error instanceof AppError) {
      await printLine(io.stderr, errorLine(error.message));
      return exitCodeOf(error.code);
    }
    if (isUsageError(error)) {
      const [cmd, parent] = await resolveTarget(main, rawArgs).catch(() => [main, undefined] as const);
      // Usage errors go to stderr whole: a script's stdout holds only what a command produced.
      await printLine(io.stderr, `${await usageFor(cmd, parent, io.stderr)}\n${errorLine(error.message)}`);
      return 2;
    }
    await printLine(io.stderr, errorLine((error as Error)?.message ?? String(error)));
    return 1;
  }
}
