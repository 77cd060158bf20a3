/**
 * valibot schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect), with @valibot/to-json-schema. What JSON
 * Schema cannot say (transforms, custom checks) is left out: the schemas stay the validators, the document
 * describes them.
 */
import { type ConversionConfig, toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";

export type JsonSchema = Record<string, unknown>;

const config: ConversionConfig = {
  target: "draft-2020-12",
  errorMode: "ignore",
  // strictMapping (src/schema.ts) is a pipe of a custom "not an array" check and a strict object: the object is what it describes.
  overrideSchema({ valibotSchema }) {
    const pipe = (valibotSchema as { pipe?: readonly { kind: string; type: string }[] }).pipe;
    const object = valibotSchema.type === "custom" ? pipe?.find((item) => item.kind === "schema" && item.type === "strict_object") : undefined;
    return object ? jsonSchemaOf(object as v.GenericSchema) : undefined;
  },
};

export function jsonSchemaOf(schema: v.GenericSchema): JsonSchema {
  const { $schema: _dialect, ...rest } = toJsonSchema(schema, config) as JsonSchema;
  return rest;
}

/** The JSON Schema of one entry of an object schema (a path or query parameter). */
export function entrySchema(schema: v.ObjectSchema<v.ObjectEntries, undefined>, key: string): JsonSchema {
  const entry = schema.entries[key];
  if (!entry) throw new Error(`schema has no entry ${key}`);
  return jsonSchemaOf(entry);
}
