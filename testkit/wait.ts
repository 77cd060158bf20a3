export interface WaitOptions {
  /** Time between reads; 100 ms unless a caller needs to see a short-lived state. */
  intervalMs?: number;
  /** Says why waiting longer is pointless (the process that would write the line has exited), else undefined. */
  hopeless?: () => string | undefined;
}

/**
 * Polls until `check` holds, time runs out or the wait is hopeless; returns the last value seen (assert on it).
 * The deadline is a safety net for an event that should come, never the thing a test measures.
 */
export async function eventually<T>(read: () => Promise<T> | T, check: (value: T) => boolean, ms: number, options: WaitOptions = {}): Promise<T> {
  const { intervalMs = 100, hopeless = () => undefined } = options;
  const deadline = Date.now() + ms;
  let value = await read();
  while (!check(value) && Date.now() < deadline && hopeless() === undefined) {
    await Bun.sleep(intervalMs);
    value = await read();
  }
  return value;
}

/**
 * `eventually` for set-up steps that have nothing to assert: throws, naming `what`, the last value seen and
 * `context()` (a process's log), when the wait ends without `check` holding.
 */
export async function waitUntil<T>(
  what: string,
  read: () => Promise<T> | T,
  check: (value: T) => boolean,
  ms: number,
  options: WaitOptions & { context?: () => string } = {},
): Promise<T> {
  const value = await eventually(read, check, ms, options);
  if (check(value)) return value;
  const why = options.hopeless?.() ?? `not within ${ms} ms`;
  throw new Error(`waiting for ${what}: ${why}; last seen ${JSON.stringify(value)}${options.context ? `\n${options.context()}` : ""}`);
}

/**
 * Lets work already under way run: every pending microtask, and the zero-delay timers it queues, to a depth of
 * `turns` (each turn waits behind the timers queued before it). Order, not time: a loaded machine runs it alike.
 */
export async function afterPendingWork(turns = 5): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}

/** Whether `promise` has settled once the work already under way ran (afterPendingWork). */
export async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await afterPendingWork();
  return done;
}

/**
 * Resolves once every timer due within `ms` from now has run: its own timer is due after them, and timers run in
 * the order they are due, however late a loaded machine runs them. For asserting that a timer did not act.
 */
export function afterTimersDue(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setTimeout(resolve, ms + 1));
}
