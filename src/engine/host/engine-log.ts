/**
 * What engine hosts print (the engine's own tracing lines, `ERROR mpc_tls::follower: error=...`, and anything
 * else on their stdout and stderr), forwarded into the prover's log with a level. Releasing a session we no
 * longer need (a warm session dropped or expired, a finished one freed) closes its MPC socket, and the engine on
 * the other side then logs the lost connection as an ERROR: after a release we asked for, that is expected and is
 * logged at debug. A connection lost with no release is kept at error (the setup watch explains it too).
 */
import type { LogFields, LogLevel, Logger } from "../../base/log.ts";

/** A release's lost connections show up within this long, on a loaded machine too. */
export const RELEASE_ECHO_MS = 10_000;

const TRACING_LINE = /^(ERROR|WARN|INFO|DEBUG|TRACE) +([\w:]+): ?(.*)$/;
/**
 * How the engine words a peer that went away: std::io::ErrorKind as text (`not connected`) or as its Rust name
 * (`Io(Kind(NotConnected))`, the mux's), and yamux's own words.
 */
const CONNECTION_LOST = /not ?connected|unexpected ?(end of file|eof)|connection ?reset|broken ?pipe|connection ?aborted|connection ?closed/i;

export interface EngineLine {
  level: LogLevel;
  message: string;
  fields: LogFields;
}

/**
 * One line as a log entry: a tracing line keeps its level (lowered to debug for a lost connection within
 * RELEASE_ECHO_MS of a release); any other line is an error (a crash, a panic). Blank lines are dropped.
 */
export function engineLine(line: string, msSinceRelease: number): EngineLine | undefined {
  const text = line.trimEnd();
  if (text.trim() === "") return undefined;
  const tracing = TRACING_LINE.exec(text.trim());
  if (!tracing) return { level: "error", message: "engine host output", fields: { output: text } };
  const [, level, target, detail] = tracing as unknown as [string, string, string, string];
  const released = level === "ERROR" && CONNECTION_LOST.test(detail) && msSinceRelease <= RELEASE_ECHO_MS;
  return {
    level: released ? "debug" : (level.toLowerCase() as LogLevel),
    message: released ? "engine: connection closed after a release" : "engine",
    fields: { target, detail },
  };
}

/** Calls `onLine` with each line of a child's output stream, as it arrives. */
export function eachLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): void {
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of stream) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        onLine(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
      }
    }
    if (buffer !== "") onLine(buffer);
  })().catch(() => {});
}

/** Forwards engine hosts' lines into `log`, knowing when the prover last released an engine object. */
export class EngineLog {
  private lastReleaseMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly log: Logger) {}

  /** A prover or Verifier was freed at our request: lost connections that follow are expected. */
  released(): void {
    this.lastReleaseMs = performance.now();
  }

  forward(pid: number, line: string): void {
    const entry = engineLine(line, performance.now() - this.lastReleaseMs);
    if (entry) this.log.log(entry.level, entry.message, { pid, ...entry.fields });
  }
}
