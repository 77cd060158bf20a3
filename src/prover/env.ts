import * as v from "valibot";
import { AppError } from "../errors.ts";

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

/**
 * Validates the variables a schema names (others in the environment are ignored); the first problem
 * becomes one config_invalid line naming the variable.
 */
export function parseEnv<S extends v.ObjectSchema<v.ObjectEntries, undefined>>(
  schema: S,
  env: Record<string, string | undefined>,
): v.InferOutput<S> {
  const known = Object.fromEntries(Object.keys(schema.entries).flatMap((k) => (env[k] !== undefined ? [[k, env[k]]] : [])));
  const parsed = v.safeParse(schema, known);
  if (parsed.success) return parsed.output;
  const issue = parsed.issues[0];
  throw new AppError("config_invalid", `${issue ? v.getDotPath(issue) : "environment"}: ${issue?.message ?? "invalid"}`);
}
