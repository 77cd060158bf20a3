/** Polls until `check` holds or time runs out; returns the last value seen (assert on it). */
export async function eventually<T>(read: () => Promise<T> | T, check: (value: T) => boolean, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!check(value) && Date.now() < deadline) {
    await Bun.sleep(100);
    value = await read();
  }
  return value;
}

/**
 * Lets work already under way run: every pending microtask, and the zero-delay timers it queues, to a depth of
 * `turns` (each turn waits behind the timers queued before it). Order, not time: a loaded machine runs it alike.
 */
export async function afterPendingWork(turns = 5): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}
