/**
 * The tlsproof/1 proof as a verifier reads it: the valibot schema of src/proof/format.ts's types (also the
 * OpenAPI document's proof schema). Messages name what was expected, for `cli verify`'s one-line reasons.
 */
import * as v from "valibot";
import { RedactionSpanSchema, nonNegativeInteger, strictMapping } from "../core/schema.ts";
import { RESPONSE_FRAMINGS } from "../http1/answer-rule.ts";
import { PROOF_VERSION, type Proof } from "./format.ts";
import { MODE_NAME } from "./modes.ts";
import { COMPARISONS } from "../claims/grammar.ts";

/** A transcript direction longer than this is refused before any text is built from it. */
export const MAX_TRANSCRIPT_LENGTH = 64 * 1024 * 1024;

const text = v.string("expected a string");
const nonEmptyText = v.pipe(text, v.minLength(1, "expected a non-empty string"));
const flag = v.boolean("expected true or false");
const list = <T extends v.GenericSchema>(item: T) => v.array(item, "expected an array");
const oneOf = <const T extends string[]>(options: T) =>
  v.picklist(options, `expected one of ${options.map((option) => `"${option}"`).join(", ")}`);
const strict = <T extends v.ObjectEntries>(entries: T) => strictMapping(entries, "expected an object");

const byteRangeEntries = { start: nonNegativeInteger(), end: nonNegativeInteger() };
const transcriptDirectionSchema = strict({
  length: nonNegativeInteger(MAX_TRANSCRIPT_LENGTH),
  revealed: list(strict({ ...byteRangeEntries, data: text })),
});

const claimSubject = { subject: nonEmptyText };
const claimSchema = v.union(
  [
    strict({ kind: v.literal("value"), ...claimSubject, value: text }),
    strict({ kind: v.literal("predicate"), ...claimSubject, op: oneOf([...COMPARISONS]), operand: text, holds: flag }),
    strict({ kind: v.literal("commitment"), ...claimSubject, commitment: v.pipe(text, v.regex(/^0x[0-9a-f]{64}$/, "expected 0x and 64 lowercase hex digits")) }),
  ],
  'expected a claim of kind "value", "predicate" or "commitment"',
);

/** A proof as the verifier reads it (also the OpenAPI document's proof schema). */
export const proofSchema = strict({
  version: v.literal(PROOF_VERSION, `expected "${PROOF_VERSION}"`),
  body: strict({
    requestId: nonEmptyText,
    notary: strict({ publicKey: text, algorithm: oneOf(["secp256k1", "secp256r1"]), embedded: v.optional(flag) }),
    // Any mode's name: which modes a verifier knows is its registry's business (modes.ts), not the format's.
    mode: v.optional(v.pipe(text, v.regex(MODE_NAME, "expected a mode's name (lower-case letters, digits and dashes)"))),
    serverName: nonEmptyText,
    serverPort: v.optional(v.pipe(nonNegativeInteger(), v.minValue(1, "expected a port (1-65535)"), v.maxValue(65535, "expected a port (1-65535)"))),
    connectionTime: nonNegativeInteger(),
    responseTime: v.optional(nonNegativeInteger()),
    responseFraming: v.optional(oneOf([...RESPONSE_FRAMINGS])),
    request: v.optional(oneOf(["revealed", "hidden"])),
    tlsVersion: oneOf(["TLS1.2", "TLS1.3"]),
    notarizedAt: nonNegativeInteger(),
    transcript: strict({ sent: transcriptDirectionSchema, recv: transcriptDirectionSchema }),
    redactions: list(
      strict({
        pattern: text,
        spans: list(RedactionSpanSchema),
        matched: flag,
      }),
    ),
    testTrustAnchor: flag,
    notaryVersion: text,
    claims: v.optional(list(claimSchema)),
    recipient: v.optional(v.pipe(text, v.regex(/^0x[0-9a-f]{40}$/, "expected 0x and 40 lowercase hex digits"))),
    evm: v.optional(
      strict({
        address: v.pipe(text, v.regex(/^0x[0-9a-f]{40}$/, "expected 0x and 40 lowercase hex digits")),
        signature: v.pipe(text, v.regex(/^0x[0-9a-f]{130}$/, "expected 0x and 130 lowercase hex digits")),
      }),
    ),
  }),
  signature: v.pipe(text, v.regex(/^[0-9a-f]{128}$/, "expected 128 lowercase hex digits")),
}) satisfies v.GenericSchema<unknown, Proof>;
