import { expect, test } from "bun:test";
import type { EngineProvers } from "../../src/engine/prover.ts";
import { type NotarySessions, type SessionState, SetupFailed, setupProverSession } from "../../src/engine/session.ts";

/**
 * An engine whose setup never settles (as tlsn-wasm's after its notary socket drops) and a notary that says
 * the session runs, then that it does not: the setup fails as SetupFailed, the engine's call is abandoned, and
 * the notary is asked no more.
 */
test("a setup whose session the notary ended fails as SetupFailed instead of waiting for good", async () => {
  const abandoned: string[] = [];
  const provers: EngineProvers = {
    create: () => ({
      setup: () => new Promise<void>(() => {}),
      sendRequest: () => Promise.reject(new Error("unused")),
      reveal: () => Promise.reject(new Error("unused")),
      free() {},
      abandon: () => void abandoned.push("setup"),
    }),
  };
  // Waiting first (its socket not attached yet), then running, then ended: only an end after running counts.
  const answers: SessionState[] = ["not_running", "running", "not_running"];
  let asked = 0;
  const notary: NotarySessions = {
    createSession: async () => "n1",
    notarizeUrl: (id) => `ws://127.0.0.1:1/notarize?sessionId=${id}`,
    release: async () => {},
    sessionState: async () => answers[Math.min(asked++, answers.length - 1)]!,
  };
  const started = performance.now();
  const failure = await setupProverSession(notary, provers, "a.test", { maxSentData: 512, maxRecvData: 1024 }).catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(SetupFailed);
  expect(failure).toMatchObject({ code: "notary_unavailable", message: "MPC setup with the notary failed: the notary ended the session during its setup (its MPC socket closed)" });
  expect(asked).toBe(3);
  expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 2_000 - 50);
  expect(abandoned).toEqual(["setup"]);
  // The engine's call never settles; the notary is not asked again.
  await Bun.sleep(2_100);
  expect(asked).toBe(3);
}, 20_000);
