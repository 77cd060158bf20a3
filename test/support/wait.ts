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
