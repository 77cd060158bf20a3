import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { requestIdSchema } from "../../src/core/request-id.ts";

describe("requestIdSchema", () => {
  const schema = requestIdSchema("not a UUID");
  test("a UUID in any case is folded to its lower-case form", () => {
    expect(v.parse(schema, "3F1C9A52-8D4E-4B7A-9C1E-2A6B5D8E7F01")).toBe("3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01");
    expect(v.parse(schema, " 3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01 ")).toBe("3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01");
  });
  test("anything else is refused with the caller's message", () => {
    for (const input of ["42", "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f0", "", 7]) {
      const result = v.safeParse(schema, input);
      expect(result.success).toBe(false);
      expect(result.issues?.[0]?.message).toBe("not a UUID");
    }
  });
});
