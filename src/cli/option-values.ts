import { AppError } from "../core/errors.ts";

/**
 * Every value of a string option given several times (`--header A --header B`): citty keeps only the last. The
 * word after the option is its value whatever it looks like (`--header -x`); `--name=value` works too.
 */
export function optionValues(rawArgs: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]!;
    if (arg === "--") break;
    if (arg.startsWith(`--${name}=`)) values.push(arg.slice(name.length + 3));
    else if (arg === `--${name}`) {
      const value = rawArgs[++i];
      if (value === undefined) throw new AppError("usage", `--${name} needs a value`);
      values.push(value);
    }
  }
  return values;
}
