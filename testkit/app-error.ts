import { AppError } from "../src/core/errors.ts";

/** What an AppError a call threw says, or undefined when it returned; any other throw is the test's failure. */
export function appErrorOf(run: () => unknown): { code: string; message: string } | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message };
    throw error;
  }
}

/** appErrorOf for a call that resolves or rejects. */
export async function appErrorOfAsync(run: () => Promise<unknown>): Promise<{ code: string; message: string } | undefined> {
  try {
    await run();
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, message: error.message };
    throw error;
  }
}

/** appErrorOf for a call that must refuse: returning at all is the test's failure. */
export function refusalOf(run: () => unknown): { code: string; message: string } {
  const refusal = appErrorOf(run);
  if (!refusal) throw new Error("expected an AppError, and the call returned");
  return refusal;
}
