/**
 * valibot building blocks shared by the formats the product reads: the proof, the notary protocol and the
 * notary's YAML. Their messages are written to follow a key path ("body.x: expected ...").
 */
import * as v from "valibot";

/** A strict object schema that also refuses arrays, which valibot's object schemas accept. */
export const strictMapping = <T extends v.ObjectEntries, M extends string>(entries: T, message: M) =>
  v.pipe(
    v.custom<Record<string, unknown>>((input) => typeof input === "object" && input !== null && !Array.isArray(input), message),
    v.strictObject(entries, message),
  );

/** A whole number from 0 to `max` (a JSON number, not a string). */
export const nonNegativeInteger = (max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(
    v.number("expected a non-negative integer"),
    v.safeInteger("expected a non-negative integer"),
    v.minValue(0, "expected a non-negative integer"),
    v.maxValue(max, `expected at most ${max}`),
  );
