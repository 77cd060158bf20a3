/** Waits for `work` unless the signal aborts first (then rejects with its reason); the work itself goes on. */
export function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const quit = () => reject(signal.reason);
    if (signal.aborted) return quit();
    signal.addEventListener("abort", quit, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", quit));
  });
}
