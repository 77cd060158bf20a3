/**
 * valibot building blocks shared by the formats the product reads (the proof, the notary protocol, the
 * notary's YAML, the environment, store queries), and the one step from a failed parse to an AppError.
 * Their messages are written to follow a key path ("body.x: expected ...").
 */
import * as v from "valibot";
import { AppError, type ErrorCode } from "./errors.ts";
import type { RedactionSpan } from "./transcript.ts";
import { tlsServerName } from "./server-name.ts";

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

/** A hidden byte range [start, end) of one transcript direction; proofs list the same spans. */
export const RedactionSpanSchema = strictMapping(
  {
    direction: v.picklist(["sent", "recv"], 'expected one of "sent", "recv"'),
    start: nonNegativeInteger(),
    end: nonNegativeInteger(),
  },
  "expected an object",
) satisfies v.GenericSchema<unknown, RedactionSpan>;

/** A server name read as TLS names the host (server-name.ts): a trailing dot dropped; one with an empty label refused. */
export const tlsServerNameSchema = (message: string) =>
  v.pipe(
    v.string(message),
    v.check((name) => tlsServerName(name) !== null, message),
    v.transform((name) => tlsServerName(name)!),
  );

/** How a schema issue is worded; the default is `<path>: <message>`. */
export interface IssueWording {
  /** What was being parsed, put first: "entry 3", "notary config". */
  where?: string;
  /** The schema's messages are whole sentences naming the field (the store's reference texts): nothing is added. */
  messageOnly?: boolean;
  /** A message that begins with its field's name ("T-REQUEST-ID must be a UUID") stands alone; the others are placed. */
  selfNamed?: boolean;
  /** Also show the offending value (only for inputs that hold no secrets). */
  showInput?: boolean;
}

/** An offending value for a one-line message: short, and never a whole document. */
function shown(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** `a.b[0].c` for an issue's path. */
function issuePath(issue: v.BaseIssue<unknown>): string {
  return (issue.path ?? [])
    .map((item) => (typeof item.key === "number" ? `[${item.key}]` : `.${String(item.key)}`))
    .join("")
    .replace(/^\./, "");
}

/** One line for a schema issue: `unknown key "a.b"`, `missing key "a.b"` or `a.b: <message>`, after `where: `. */
export function describeIssue(issue: v.BaseIssue<unknown> | undefined, wording: IssueWording = {}): string {
  if (!issue) return `${wording.where ?? "input"}: invalid`;
  if (wording.messageOnly) return issue.message;
  const head = wording.where ? `${wording.where}: ` : "";
  const path = issuePath(issue);
  if (wording.selfNamed && path && issue.message.toLowerCase().startsWith(path.toLowerCase())) return issue.message;
  if (issue.type.startsWith("strict_") && issue.expected === "never") return `${head}unknown key "${path}"`;
  if (issue.received === "undefined" && path) return `${head}missing key "${path}"`;
  return `${head}${path || "value"}: ${issue.message}${wording.showInput ? `, got ${shown(issue.input)}` : ""}`;
}

/** The step from a failed valibot parse to an AppError, for every input the product reads. */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, code: ErrorCode, wording?: IssueWording): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  throw new AppError(code, describeIssue(result.issues[0], wording));
}
