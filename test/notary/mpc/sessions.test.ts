import { describe, expect, test } from "bun:test";
import type { ServerWebSocket } from "bun";
import type { LoopbackBridge } from "../../../src/engine/bridge.ts";
import type { EngineVerifiers, VerifierOutput } from "../../../src/engine/verifier.ts";
import type { NotarySocketData } from "../../../src/notary/modes.ts";
import { MpcSessions } from "../../../src/notary/mpc/sessions.ts";
import { keptLog } from "../../../testkit/kept-log.ts";
import { afterPendingWork } from "../../../testkit/wait.ts";

const LIMITS = { concurrency: 2, maxSentData: 1024, maxRecvData: 2048, timeoutMs: 60_000, connectTimeoutMs: 30_000 };

/** Sessions whose Verifiers the test fails by hand; the bridge and the prover's socket are inert. */
function sessionsWithFakeVerifier() {
  const failVerifier: ((error: Error) => void)[] = [];
  const verifiers: EngineVerifiers = {
    create: () => ({
      verify: () => new Promise<VerifierOutput>((_, reject) => failVerifier.push(reject)),
      free() {},
      abandon() {},
    }),
  };
  /** What the Verifier sends its prover goes through its peer's onData. */
  const toProver: ((data: Uint8Array) => void)[] = [];
  const bridge = {
    openPeer: ({ onData }: { onData: (data: Uint8Array) => void }) => {
      toProver.push(onData);
      return { url: "ws://127.0.0.1:1/", send() {}, release() {}, close() {} };
    },
  } as unknown as LoopbackBridge;
  const { log, lines } = keptLog((message, fields) => `${message} ${fields.reason ?? ""}`.trim());
  const sessions = new MpcSessions(LIMITS, bridge, verifiers, log);
  const socketOf = (sessionId: string) =>
    ({ data: { sessionId, mode: "mpc" }, readyState: 1, close() {}, sendBinary() {} }) as unknown as ServerWebSocket<NotarySocketData>;
  return { sessions, failVerifier, lines, socketOf, toProver };
}

describe("notary sessions", () => {
  test("a released session ends once: its Verifier failing afterwards neither ends nor counts it again", async () => {
    const { sessions, failVerifier, lines, socketOf } = sessionsWithFakeVerifier();
    const id = sessions.create({ maxSentData: 1024, maxRecvData: 2048 });
    sessions.attach(socketOf(id));
    expect(sessions.isRunning(id)).toBe(true);
    sessions.release(id);
    failVerifier[0]!(new Error("verifier error: mpc error caused by: I/O error: unexpected end of file"));
    await afterPendingWork();
    expect(lines).toEqual(["session ended released by the prover"]);
    expect(sessions.failures()).toBe(1);
    expect(sessions.active()).toBe(0);
  });

  test("a Verifier that fails while its session runs ends it, with the engine's words in the log", async () => {
    const { sessions, failVerifier, lines, socketOf } = sessionsWithFakeVerifier();
    const id = sessions.create({ maxSentData: 1024, maxRecvData: 2048 });
    sessions.attach(socketOf(id));
    failVerifier[0]!(new Error("verifier error: io error caused by: unexpected end of file"));
    await afterPendingWork();
    expect(lines).toEqual([
      "session failed verifier error: io error caused by: unexpected end of file",
      "session ended the MPC session failed or the prover went away",
    ]);
    expect(sessions.failures()).toBe(1);
  });

  test("a running session's traffic: bytes each way and the time since the last byte; none unless it runs", async () => {
    const { sessions, socketOf, toProver } = sessionsWithFakeVerifier();
    const id = sessions.create({ maxSentData: 1024, maxRecvData: 2048 });
    expect(sessions.traffic(id)).toBeUndefined();
    const socket = socketOf(id);
    sessions.attach(socket);
    sessions.forward(socket, new Uint8Array(300));
    toProver[0]!(new Uint8Array(40));
    toProver[0]!(new Uint8Array(2));
    await Bun.sleep(30);
    const quiet = sessions.traffic(id)!;
    expect(quiet).toMatchObject({ fromProverBytes: 300, toProverBytes: 42 });
    expect(quiet.quietMs).toBeGreaterThanOrEqual(25);
    sessions.forward(socket, new Uint8Array(8));
    const moved = sessions.traffic(id)!;
    expect(moved.fromProverBytes).toBe(308);
    expect(moved.quietMs).toBeLessThan(quiet.quietMs);
    sessions.release(id);
    expect(sessions.traffic(id)).toBeUndefined();
  });
});
