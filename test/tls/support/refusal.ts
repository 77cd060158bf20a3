import { expect } from "bun:test";
import { AppError, type ErrorCode } from "../../../src/core/errors.ts";

/** Runs `run`, expecting an AppError of `code` whose message matches `message` and shows none of `secrets`. */
export function expectRefusal(run: () => unknown, code: ErrorCode, message: RegExp, secrets: readonly string[] = []): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(AppError);
  const error = caught as AppError;
  expect({ code: error.code, message: error.message }).toEqual({ code, message: expect.stringMatching(message) });
  for (const secret of secrets) expect(error.message).not.toContain(secret);
}
