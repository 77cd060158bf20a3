/**
 * Every proof version this code reads, each with its schema: verification dispatches on a proof's `version`
 * here, and a new version (a new body shape) is added here. The signed bytes begin with the version
 * (canonical.ts), so a signature over one version's body can never pass for another's. A proof of any mode is a
 * tlsproof/1 proof whose body names its mode: the same version, read by the same schema (modes.ts says which modes
 * a verifier knows).
 */
import type * as v from "valibot";
import { PROOF_VERSION, type Proof } from "./format.ts";
import { proofSchema } from "./proof-schema.ts";

const schemas: Record<string, v.GenericSchema<unknown, Proof>> = { [PROOF_VERSION]: proofSchema };

/** The versions this code reads, for messages. */
export const READ_VERSIONS: readonly string[] = Object.keys(schemas);

/** The schema of a proof's `version`, or undefined for a version this code does not read. */
export function schemaOfVersion(version: unknown): v.GenericSchema<unknown, Proof> | undefined {
  return typeof version === "string" && Object.hasOwn(schemas, version) ? schemas[version] : undefined;
}
