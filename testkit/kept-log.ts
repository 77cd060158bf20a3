import type { LogFields, Logger } from "../src/base/log.ts";

/** A logger that keeps each line, at any level, as `line` writes it (the message and whichever fields a test reads). */
export function keptLog(line: (message: string, fields: LogFields) => string): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log: Logger = {
    log: (_level, message, fields = {}) => void lines.push(line(message, fields)),
    debug: (message, fields) => log.log("debug", message, fields),
    info: (message, fields) => log.log("info", message, fields),
    warn: (message, fields) => log.log("warn", message, fields),
    error: (message, fields) => log.log("error", message, fields),
    child: () => log,
  };
  return { log, lines };
}
