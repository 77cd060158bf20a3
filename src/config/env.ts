/** Building blocks of the environment schemas: every value arrives as a string and is named by its variable. */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { parseOrThrow } from "../core/schema.ts";

/** A whole number in an environment variable, within [min, max] (parseEnv names the variable). */
export const wholeNumber = (min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, "must be a whole number"),
    v.transform(Number),
    v.number(),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );

const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as its settings are written: `250ms`, `30s`, `5m`, `2h`, `7d` (the largest unit that divides it). */
export function durationText(ms: number): string {
  const [unit, size] = Object.entries(DURATION_UNIT_MS).reverse().find(([, size]) => ms % size === 0 && ms > 0) ?? ["ms", 1];
  return `${ms / size}${unit}`;
}

/**
 * A duration such as `250ms`, `30s`, `90m`, `12h` or `30d`, in milliseconds, within [minMs, maxMs]; with
 * `wholeSeconds`, a whole number of seconds (a limit Bun takes in seconds).
 */
export const duration = (minMs: number, maxMs = Number.MAX_SAFE_INTEGER, wholeSeconds = false) =>
  v.pipe(
    v.string(),
    v.trim(),
    v.regex(/^\d{1,9}(ms|s|m|h|d)$/, "must be a duration such as 250ms, 30s, 90m, 12h or 30d"),
    v.transform((text) => {
      const unit = /[a-z]+$/.exec(text)![0];
      return Number(text.slice(0, -unit.length)) * (DURATION_UNIT_MS[unit] as number);
    }),
    v.minValue(minMs, `must be at least ${durationText(minMs)}`),
    v.maxValue(maxMs, `must be at most ${durationText(maxMs)}`),
    v.check((ms) => !wholeSeconds || ms % 1000 === 0, "must be whole seconds"),
  );

/** A setting's former name, still read: a whole number of `unitMs` (1000: seconds; 1: milliseconds). */
export interface FormerName {
  name: string;
  unitMs: number;
}

/**
 * Duration settings set under their former names (deprecated, still read): each value moves to its setting's name,
 * in milliseconds, and `deprecated` gets a line naming what to set instead. Setting both names is an error.
 */
export function readFormerNames<E extends object>(env: Record<string, string | undefined>, parsed: E, former: Partial<Record<keyof E & string, FormerName>>, deprecated: string[]): void {
  const values = parsed as Record<string, unknown>;
  for (const [name, was] of Object.entries(former) as [string, FormerName][]) {
    if (env[was.name] === undefined) continue;
    if (env[name] !== undefined) throw new AppError("config_invalid", `${was.name} is the former name of ${name}: set ${name} only`);
    const ms = (values[was.name] as number) * was.unitMs;
    values[name] = ms;
    deprecated.push(`${was.name} is deprecated and will go: set ${name}=${durationText(ms)} instead`);
  }
}

/** `1`/`true` or `0`/`false`. */
export const flag = () =>
  v.pipe(
    v.picklist(["0", "1", "true", "false"], "must be 1, 0, true or false"),
    v.transform((s) => s === "1" || s === "true"),
  );

/** A comma list; blanks around entries and empty entries are dropped. */
export const list = v.pipe(
  v.string(),
  v.transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean)),
);

/** One of `options`, in any case, as written in `options`. */
export const oneOfAnyCase = <const T extends string[]>(options: T) =>
  v.pipe(
    v.string(),
    v.transform((s) => s.toLowerCase()),
    v.picklist(options, `must be one of ${options.join(", ")}`),
  );

/**
 * Validates the variables a schema names (others in the environment are ignored); the first problem
 * becomes one config_invalid line naming the variable.
 */
export function parseEnv<S extends v.ObjectSchema<v.ObjectEntries, undefined>>(
  schema: S,
  env: Record<string, string | undefined>,
): v.InferOutput<S> {
  const known = Object.fromEntries(Object.keys(schema.entries).flatMap((k) => (env[k] !== undefined ? [[k, env[k]]] : [])));
  return parseOrThrow(schema, known, "config_invalid");
}

/** Edit distance (insertions, deletions, substitutions) between two names. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The known name nearest to `name`. */
export const closestName = (name: string, known: readonly string[]): string | undefined =>
  known.reduce<{ name?: string; distance: number }>(
    (best, candidate) => {
      const distance = editDistance(name, candidate);
      return distance < best.distance ? { name: candidate, distance } : best;
    },
    { distance: Number.POSITIVE_INFINITY },
  ).name;

/**
 * Refuses a variable with `prefix` that is not one of `known`: a misspelt setting would otherwise be ignored
 * without a word (config_invalid naming it and the closest known name).
 */
export function refuseUnknownVariables(env: Record<string, string | undefined>, prefix: string, known: readonly string[]): void {
  const unknown = Object.keys(env).filter((name) => name.startsWith(prefix) && env[name] !== undefined && !known.includes(name)).sort();
  if (unknown.length === 0) return;
  const [first] = unknown as [string];
  const others = unknown.length > 1 ? ` (and ${unknown.length - 1} more: ${unknown.slice(1).join(", ")})` : "";
  throw new AppError("config_invalid", `unknown setting ${first}: did you mean ${closestName(first, known)}?${others} (every ${prefix}* setting: docs/prover.md)`);
}
