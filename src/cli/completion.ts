import { type CommandDef, defineCommand } from "citty";

/**
 * `cli complete bash|zsh|fish|powershell` prints a completion script; the script calls `cli complete -- <words>`
 * for the candidates (@bomb.sh/tab, citty adapter). Listing the flags loads every sub-command, engine and
 * servers included, so this is set up only when the `complete` command is asked for.
 */
export async function addCompletion(main: CommandDef, rawArgs: readonly string[]): Promise<void> {
  if (rawArgs[0] !== "complete") return;
  const { default: tab } = await import("@bomb.sh/tab/citty");
  await tab(main);
}

/**
 * `complete` as help lists it. It never runs itself: when asked for, addCompletion puts the completion
 * library's own command in its place.
 */
export const completeCommand = defineCommand({
  meta: { name: "complete", description: "Print a shell completion script, e.g. source <(cli complete bash)" },
  args: { shell: { type: "positional", description: "bash, zsh, fish or powershell", required: false } },
});
