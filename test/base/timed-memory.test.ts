import { expect, test } from "bun:test";
import { timedMemory } from "../../src/base/timed-memory.ts";

test("a value is remembered for its time, forgotten when deleted or expired, and the memory starts afresh past its limit", () => {
  const memory = timedMemory<string>(2);
  memory.set("a", "tls12", 60_000);
  expect(memory.get("a")).toBe("tls12");
  expect(memory.get("b")).toBeUndefined();
  memory.delete("a");
  expect(memory.get("a")).toBeUndefined();
  // Expired the moment it was set.
  memory.set("gone", "x", -1);
  expect(memory.get("gone")).toBeUndefined();
  memory.set("b", "y", 60_000);
  // Two entries held: the third clears them.
  memory.set("c", "z", 60_000);
  expect([memory.get("b"), memory.get("c")]).toEqual([undefined, "z"]);
});
