/**
 * The calls of one wasm object (a Prover or a Verifier). The engine refuses to free an object while one of its
 * async calls runs, so a free asked for then happens once that call settles.
 */
export class WasmObjectCalls {
  private freed = false;
  private running: Promise<unknown> | undefined;

  constructor(private readonly release: () => void) {}

  track<T>(call: Promise<T>): Promise<T> {
    this.running = call;
    const done = () => {
      if (this.running === call) this.running = undefined;
    };
    call.then(done, done);
    return call;
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    const running = this.running;
    if (running) running.then(() => this.releaseOnce(), () => this.releaseOnce());
    else this.releaseOnce();
  }

  private releaseOnce() {
    try {
      this.release();
    } catch {
      // Already released by the engine after a failure.
    }
  }
}
