/**
 * Structured logs on stderr. COMPACT is one readable line per event; JSON is one object per line (the
 * configuration chooses: the prover's LOG_FORMAT, the notary's log.format). Callers pass fields, never secrets: redacted values, keys and API keys
 * are not logged anywhere in this codebase.
 */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";
export type LogFormat = "compact" | "json";
export type LogFields = Record<string, string | number | boolean | undefined>;

const rank: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };

export interface Logger {
  log(level: LogLevel, message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export function createLogger(options: { level?: LogLevel; format?: LogFormat; fields?: LogFields } = {}): Logger {
  const level = options.level ?? "info";
  const format = options.format ?? "compact";
  const base = options.fields ?? {};
  const log = (at: LogLevel, message: string, fields: LogFields = {}) => {
    if (rank[at] < rank[level]) return;
    const all = { ...base, ...fields };
    const line =
      format === "json"
        ? JSON.stringify({ time: new Date().toISOString(), level: at, message, ...all })
        : `${new Date().toISOString()} ${at.toUpperCase().padEnd(5)} ${message}${Object.entries(all)
            .filter(([, v]) => v !== undefined)
            .map(([k, v]) => ` ${k}=${typeof v === "string" && /\s/.test(v) ? JSON.stringify(v) : v}`)
            .join("")}`;
    process.stderr.write(`${line}\n`);
  };
  return {
    log,
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
    child: (fields) => createLogger({ level, format, fields: { ...base, ...fields } }),
  };
}
