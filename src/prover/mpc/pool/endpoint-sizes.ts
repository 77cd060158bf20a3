/**
 * Answer sizes learned per endpoint (see `endpointKey`), in memory and bounded: the least recently used
 * endpoint is forgotten first. Not persisted: sizes drift, and forgetting one costs at most a default-size
 * session or one repeat of a GET.
 */
export class EndpointSizes {
  private readonly recv = new Map<string, number>();

  constructor(private readonly capacity: number) {}

  /** The answer size last seen for this endpoint (undefined when unknown); marks it recently used. */
  expected(key: string): number | undefined {
    const bytes = this.recv.get(key);
    if (bytes === undefined) return undefined;
    this.recv.delete(key);
    this.recv.set(key, bytes);
    return bytes;
  }

  /** Records an answer of `recvBytes` (the latest answer wins: endpoints change). */
  learn(key: string, recvBytes: number): void {
    if (this.capacity <= 0) return;
    this.recv.delete(key);
    this.recv.set(key, recvBytes);
    if (this.recv.size > this.capacity) this.recv.delete(this.recv.keys().next().value!);
  }

  get size(): number {
    return this.recv.size;
  }
}
