/**
 * Work that several tests use (a proof made over a real MPC session), done once, on first use, by whichever test
 * needs it first: no test depends on the one before it, and each also runs alone (`bun test -t`).
 */
export function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}
