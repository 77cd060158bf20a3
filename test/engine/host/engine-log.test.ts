import { describe, expect, test } from "bun:test";
import { EngineLog, RELEASE_ECHO_MS, engineLine } from "../../../src/engine/host/engine-log.ts";
import { type LogFields, type LogLevel, type Logger, createLogger } from "../../../src/base/log.ts";

/** The lines a released warm session made the engine print (seen on this project's machines). */
const VERIFIER_EOF = "ERROR mpc_tls::follower: error=I/O error: unexpected end of file";
const YAMUX = "ERROR uid_mux::yamux: error=i/o error: not connected";
/** The same, as the mux words it with the error kind's Rust name (seen in CI). */
const MUX = "ERROR tlsn_common::mux: mux error: Io(Kind(NotConnected))";

describe("engine host output in the prover's log", () => {
  test("a lost connection right after a release is debug; without a release, or later, it stays an error", () => {
    expect(engineLine(VERIFIER_EOF, 5)).toEqual({ level: "debug", message: "engine: connection closed after a release", fields: { target: "mpc_tls::follower", detail: "error=I/O error: unexpected end of file" } });
    expect(engineLine(YAMUX, RELEASE_ECHO_MS)?.level).toBe("debug");
    expect(engineLine(YAMUX, RELEASE_ECHO_MS + 1)?.level).toBe("error");
    expect(engineLine(YAMUX, Number.POSITIVE_INFINITY)?.level).toBe("error");
    expect(engineLine(MUX, 5)?.level).toBe("debug");
    expect(engineLine(MUX, RELEASE_ECHO_MS + 1)?.level).toBe("error");
    expect(engineLine("ERROR tlsn_common::mux: error=Io(Kind(UnexpectedEof))", 5)?.level).toBe("debug");
  });

  test("other engine errors keep their level, whatever was released; other output is an error; blank lines go", () => {
    expect(engineLine("ERROR tlsn_prover: error=commitment too large", 1)).toMatchObject({ level: "error", message: "engine" });
    expect(engineLine("WARN tlsn_verifier: slow", 1)?.level).toBe("warn");
    expect(engineLine("thread panicked at src/lib.rs:1", 1)).toMatchObject({ level: "error", fields: { output: "thread panicked at src/lib.rs:1" } });
    expect(engineLine("", 1)).toBeUndefined();
    expect(engineLine("   ", 1)).toBeUndefined();
  });

  test("EngineLog counts from the last release", () => {
    const entries: [LogLevel, string, LogFields | undefined][] = [];
    const quiet = createLogger({ level: "error" });
    const log: Logger = { ...quiet, log: (level: LogLevel, message: string, fields?: LogFields) => void entries.push([level, message, fields]) };
    const engineLog = new EngineLog(log);
    engineLog.forward(7, YAMUX);
    engineLog.released();
    engineLog.forward(7, YAMUX);
    expect(entries.map(([level]) => level)).toEqual(["error", "debug"]);
    expect(entries[1]![2]).toMatchObject({ pid: 7, target: "uid_mux::yamux" });
  });
});
