import type { EngineProver } from "../src/engine/prover.ts";

const unused = () => Promise.reject(new Error("pool logic tests never run the engine"));

/** The engine side of a session in the pool's logic tests: never run, only freed. */
export const unusedEngine = (): EngineProver => ({
  setup: unused,
  sendRequest: unused,
  reveal: unused,
  free() {},
  abandon() {},
});
