import { AppError, errorText } from "../core/errors.ts";
import type { Logger } from "../base/log.ts";

/** Starting a server: a port in use or a bad address is a configuration error, not a crash. */
export async function listening<T>(what: string, start: () => Promise<T> | T): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof AppError) throw error;
    const text = errorText(error);
    if (/EADDRINUSE|in use/i.test(text)) throw new AppError("config_invalid", `${what}: the port is already in use`);
    if (/EADDRNOTAVAIL|EACCES/i.test(text)) throw new AppError("config_invalid", `${what}: cannot listen on that address (${text})`);
    throw error;
  }
}

/**
 * Resolves once the server has stopped gracefully after SIGTERM or SIGINT: a server command's run ends
 * there, and the command line exits 0. Its handlers are in place when it returns, so call it before saying the
 * server is ready: a supervisor that signals as soon as it reads that line must not meet the default action (exit 143).
 */
export function untilSignalled(log: Logger, stop: () => Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    let stopping = false;
    const onSignal = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info("shutting down", { signal });
      stop().then(resolve, reject);
    };
    process.on("SIGTERM", () => onSignal("SIGTERM"));
    process.on("SIGINT", () => onSignal("SIGINT"));
  });
}
