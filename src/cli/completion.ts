import type { CommandDef } from "citty";

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
