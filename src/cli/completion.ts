import { readdirSync } from "node:fs";
import { dirname } from "node:path";
import { type ArgsDef, type CommandDef, defineCommand } from "citty";

/**
 * `cli complete bash|zsh|fish|powershell` prints a completion script; the script calls `cli complete -- <words>`
 * for the candidates (@bomb.sh/tab, citty adapter). Listing the flags loads every sub-command, engine and
 * servers included, so this is set up only when the `complete` command is asked for. Beside commands and flags it
 * completes the values of enum flags (`--mode mpc|proxy`) and of flags taking a path (`valueHint: "file"` or
 * `"dir"`): the library asks shells not to complete files themselves, so paths are listed here.
 */
export async function addCompletion(main: CommandDef, rawArgs: readonly string[]): Promise<void> {
  if (rawArgs[0] !== "complete") return;
  const { default: tab } = await import("@bomb.sh/tab/citty");
  // The word being completed: the last one after `--` (empty when the shell asks for a new word).
  const word = rawArgs.includes("--") ? (rawArgs.at(-1) ?? "") : "";
  await tab(main, await valueCompletions(main, word));
}

type Complete = (value: string, description: string) => void;
interface CompletionConfig {
  subCommands?: Record<string, CompletionConfig>;
  options?: Record<string, (complete: Complete) => void>;
}

/** The entries of the folder `word` names so far that start as its last part does, folders ending in `/`. */
export function pathCandidates(word: string, foldersOnly: boolean): string[] {
  const folder = word.endsWith("/") ? word : dirname(word) === "." && !word.startsWith("./") ? "" : `${dirname(word)}/`;
  const start = word.slice(folder.length);
  let entries;
  try {
    entries = readdirSync(folder === "" ? "." : folder, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => entry.name.startsWith(start) && (start.startsWith(".") || !entry.name.startsWith(".")) && (!foldersOnly || entry.isDirectory()))
    .map((entry) => `${folder}${entry.name}${entry.isDirectory() ? "/" : ""}`)
    .sort();
}

/** Handlers for each flag whose values can be listed, command by command. */
async function valueCompletions(command: CommandDef, word: string): Promise<CompletionConfig> {
  const resolve = async <T>(value: T | (() => T | Promise<T>) | Promise<T>): Promise<T> => (typeof value === "function" ? await (value as () => T | Promise<T>)() : await value);
  const args = ((await resolve(command.args)) ?? {}) as ArgsDef;
  const options: Record<string, (complete: Complete) => void> = {};
  for (const [name, arg] of Object.entries(args)) {
    if (arg.type === "enum" && "options" in arg && arg.options) {
      const values = arg.options;
      options[name] = (complete) => values.forEach((value) => complete(value, ""));
    } else if ("valueHint" in arg && (arg.valueHint === "file" || arg.valueHint === "dir")) {
      const foldersOnly = arg.valueHint === "dir";
      options[name] = (complete) => pathCandidates(word, foldersOnly).forEach((path) => complete(path, ""));
    } else if (arg.type === "string") {
      // The library takes a flag with no handler for a boolean one, and then completes the next word as a command.
      options[name] = () => {};
    }
  }
  const subCommands: Record<string, CompletionConfig> = {};
  for (const [name, sub] of Object.entries((await resolve(command.subCommands)) ?? {})) subCommands[name] = await valueCompletions(await resolve(sub as CommandDef), word);
  return { options, subCommands };
}

/**
 * `complete` as help lists it. It never runs itself: when asked for, addCompletion puts the completion
 * library's own command in its place.
 */
export const completeCommand = defineCommand({
  meta: { name: "complete", description: "Print a shell completion script, e.g. source <(cli complete bash)" },
  args: { shell: { type: "positional", description: "bash, zsh, fish or powershell", required: false } },
});
