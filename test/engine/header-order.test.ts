import { beforeAll, expect, test } from "bun:test";
import { drawHeaderOrder, throwawayMap, throwawayProver } from "../../src/engine/header-order.ts";
import { startEngine } from "../../src/engine/wasm.ts";

beforeAll(() => startEngine({ threads: 1 }), 60_000);

test("what a throwaway map rests on: a prover that is not set up refuses a request (the wasm side reads it first, making its header map)", async () => {
  const prover = throwawayProver();
  try {
    expect(await throwawayMap(prover)).toContain("expected State::Setup");
  } finally {
    prover.free();
  }
});

test("a draw makes from none to 31 throwaway maps and returns", async () => {
  expect(await drawHeaderOrder(() => 0)).toBe(0);
  expect(await drawHeaderOrder(() => 0.5)).toBe(16);
  expect(await drawHeaderOrder(() => 0.999)).toBe(31);
});
