/**
 * valibot schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect), with @valibot/to-json-schema. What JSON
 * Schema cannot say (transforms, custom checks) is left out: the schemas stay the validators, the document
 * describes them. Named schemas become the document's components, and every use of one a `$ref` to it.
 */
import { type ConversionConfig, toJsonSchema, toJsonSchemaDefs } from "@valibot/to-json-schema";
import type * as v from "valibot";

export type JsonSchema = Record<string, unknown>;

export interface SchemaConverter {
  /**
   * A schema's JSON Schema. `input`: what a request may carry, read up to the schema's first transform (a header
   * `"3"` that becomes the number 3 is a string); otherwise the whole pipe.
   */
  of(schema: v.GenericSchema, side?: "input"): JsonSchema;
  /** The named schemas, for the document's `components.schemas`. */
  components(): Record<string, JsonSchema>;
}

/** strictMapping (src/core/schema.ts) is a pipe of a custom "not an array" check and a strict object: the object is what it describes. */
function mappingObject(valibotSchema: v.GenericSchema): v.GenericSchema | undefined {
  const pipe = (valibotSchema as { pipe?: readonly { kind: string; type: string }[] }).pipe;
  const object = valibotSchema.type === "custom" ? pipe?.find((item) => item.kind === "schema" && item.type === "strict_object") : undefined;
  return object as v.GenericSchema | undefined;
}

export function schemaConverter(named: Readonly<Record<string, v.GenericSchema>> = {}): SchemaConverter {
  const config = (typeMode: ConversionConfig["typeMode"]): ConversionConfig => ({
    target: "draft-2020-12",
    errorMode: "ignore",
    typeMode,
    definitions: named as Record<string, v.GenericSchema>,
    overrideSchema({ valibotSchema }) {
      const object = mappingObject(valibotSchema);
      return object ? convert(object, typeMode) : undefined;
    },
    overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
  });
  // The named schemas are components of the document, not `$defs` repeated in every schema.
  const convert = (schema: v.GenericSchema, typeMode: ConversionConfig["typeMode"]): JsonSchema => {
    const { $schema: _dialect, $defs: _named, ...rest } = toJsonSchema(schema, config(typeMode)) as JsonSchema;
    return rest;
  };
  return {
    of: (schema, side) => convert(schema, side === "input" ? "input" : "ignore"),
    components: () => toJsonSchemaDefs(named as Record<string, v.GenericSchema>, config("ignore")) as Record<string, JsonSchema>,
  };
}
