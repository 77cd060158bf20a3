import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import { createLogger } from "../../../src/base/log.ts";
import type { ProofOutcome } from "../../../src/proof/outcome.ts";
import { signProof } from "../../../src/proof/sign.ts";
import { generateKey } from "../../../src/proof/keys.ts";
import { ProofDelivery } from "../../../src/prover/delivery/proof-delivery.ts";
import { ProofHub } from "../../../src/prover/delivery/proof-hub.ts";
import { type LifecycleDeps, type ProofLifecycle, proofLifecycle } from "../../../src/prover/proving/lifecycle.ts";
import type { ModeExchange, ModeRun, PreparedCall, ProofCall, ProvingMode } from "../../../src/prover/proving/mode.ts";
import type { RunControl } from "../../../src/prover/proving/run-control.ts";
import { type Store, loadNodeKey, openStore } from "../../../src/store/index.ts";
import { scratchDir } from "../../../testkit/env.ts";
import { proofCallOf } from "../../../testkit/proof-call.ts";
import { sampleBody } from "../../proof/fixtures.ts";

/**
 * The one lifecycle every mode runs through, with a scripted mode and the real delivery over SQLite (no network):
 * whatever the mode does, its id is settled once, its run discarded when no proof comes and ended once, the deadline
 * and the shutdown abandon it, and a refusal of its places settles nothing.
 */
const key = generateKey("secp256k1");
const ANSWER = new TextEncoder().encode('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}');
const SENT = new TextEncoder().encode("GET / HTTP/1.1\r\nhost: a.example\r\n\r\n");

interface Script {
  exchange?: (control: RunControl) => Promise<ModeExchange>;
  start?: () => void;
  failure?: AppError;
  status?: number;
  deadlineMs?: number;
}

/** A mode that does as `script` says and records what the lifecycle asked of it. */
function scriptedMode(script: Script = {}) {
  const seen = { discard: 0, end: 0, reveal: 0, aborted: false };
  const run = (control: RunControl): ModeRun => {
    control.signal.addEventListener("abort", () => (seen.aborted = true));
    return {
      exchange: () => script.exchange?.(control) ?? Promise.resolve({ answer: { status: script.status ?? 200, headers: [] }, sent: SENT, recv: ANSWER, notarySessionId: "s1" }),
      reveal: async (redaction) => {
        seen.reveal++;
        return { redactions: redaction.declared, fields: { extra: "mode's own" } };
      },
      failure: () => script.failure,
      discard: () => void seen.discard++,
      end: () => void seen.end++,
    };
  };
  const mode: ProvingMode = {
    facts: { name: "scripted", summary: "a test mode", notaryDials: false, mayHideRequest: false, notarySeesAnswer: false, evmType: "ScriptedAttestation" },
    prepare: (): PreparedCall => ({ deadlineMs: script.deadlineMs ?? 10_000, start: (control) => (script.start?.(), run(control)) }),
  };
  return { mode, seen };
}

let store: Store;
let delivery: ProofDelivery;
let lifecycle: ProofLifecycle;
let shutdown: AbortController;
const attested: { mode: string; sessionId: string; request: Record<string, unknown> }[] = [];
let attestation: () => Promise<unknown> = async () => undefined;
const timings: string[] = [];

beforeAll(async () => {
  const dataDir = scratchDir("lifecycle");
  store = await openStore({ dataDir });
  const records = await store.proofRecords(loadNodeKey(dataDir), "proofs");
  delivery = new ProofDelivery(new ProofHub({ retentionMs: 60_000, maxRetainedBytes: 1 << 20 }), records, { unknownRequestMs: 60_000, storePollMs: 60_000 }, createLogger({ level: "error" }));
  const notary = {
    attest: async (mode: string, sessionId: string, request: { requestId: string }) => {
      attested.push({ mode, sessionId, request });
      await attestation();
      return signProof({ ...sampleBody(key), requestId: request.requestId }, key);
    },
  } as unknown as LifecycleDeps["notary"];
  shutdown = new AbortController();
  const timeProxy = ({ mode }: { mode: string }) => (result: string) => void timings.push(`${mode} ${result}`);
  lifecycle = proofLifecycle({ notary, delivery, shutdown: shutdown.signal, timeProxy, log: createLogger({ level: "error" }) });
});

afterAll(async () => {
  await store?.close();
});

const callOf = (overrides: Partial<ProofCall> = {}): ProofCall => proofCallOf("https://a.example/", overrides);

const outcomeOf = (requestId: string): Promise<ProofOutcome> => delivery.watch(requestId).outcome;

async function runScripted(script: Script, call = callOf()) {
  const { mode, seen } = scriptedMode(script);
  const answer = lifecycle.run(mode, mode.prepare(call), call);
  return { answer, seen, call };
}

describe("the proof lifecycle, whatever the mode", () => {
  test("a proof: the answer at once, then the mode reveals, the notary attests in the mode's name, the id gets the proof, the run ends once", async () => {
    const { answer, seen, call } = await runScripted({});
    expect(await answer).toMatchObject({ answer: { status: 200 }, proofFollows: true });
    const outcome = await outcomeOf(call.requestId);
    expect(outcome.event).toBe("proof");
    expect(attested.at(-1)).toMatchObject({ mode: "scripted", sessionId: "s1", request: { requestId: call.requestId, extra: "mode's own" } });
    expect(await lifecycle.drained(5_000)).toBe(true);
    expect(seen).toEqual({ discard: 0, end: 1, reveal: 1, aborted: false });
    expect(timings.at(-1)).toBe("scripted answered");
  });

  test("no proof for the answer (a 404 without T-PROVE-FAILED-REQ): the client has the answer, the id the refusal, the run is discarded and ended", async () => {
    const { answer, seen, call } = await runScripted({ status: 404 });
    expect((await answer).proofFollows).toBe(false);
    expect(await outcomeOf(call.requestId)).toMatchObject({ event: "error", code: "target_request_failed" });
    expect(seen).toMatchObject({ discard: 1, end: 1, reveal: 0 });
  });

  test("a failed exchange: the mode's own reason wins, the id is settled with it, the run is discarded and ended", async () => {
    const exchange = () => Promise.reject(new Error("the socket broke"));
    const { answer, seen, call } = await runScripted({ exchange, failure: new AppError("session_failed", "the notary ended the relay: idle") });
    await expect(answer).rejects.toMatchObject({ code: "session_failed", message: "the notary ended the relay: idle" });
    expect(await outcomeOf(call.requestId)).toMatchObject({ code: "session_failed", message: "the notary ended the relay: idle" });
    expect(seen).toMatchObject({ discard: 1, end: 1 });
    expect(timings.at(-1)).toBe("scripted failed");
  });

  test("the deadline abandons a run that hangs: the mode is told, the client and the id get session_timeout", async () => {
    const { answer, seen, call } = await runScripted({ exchange: () => new Promise(() => {}), deadlineMs: 50 });
    await expect(answer).rejects.toMatchObject({ code: "session_timeout" });
    expect(await outcomeOf(call.requestId)).toMatchObject({ code: "session_timeout" });
    expect(seen).toMatchObject({ aborted: true, discard: 1, end: 1 });
  });

  test("an attestation that fails settles the id with its reason, discards and ends the run", async () => {
    attestation = () => Promise.reject(new AppError("notary_untrusted", "the notary is not trusted: its answer was refused"));
    try {
      const { answer, seen, call } = await runScripted({});
      expect((await answer).proofFollows).toBe(true);
      expect(await outcomeOf(call.requestId)).toMatchObject({ code: "notary_untrusted" });
      expect(await lifecycle.drained(5_000)).toBe(true);
      expect(seen).toMatchObject({ discard: 1, end: 1, reveal: 1 });
    } finally {
      attestation = async () => undefined;
    }
  });

  test("no place for the call (over capacity): nothing claimed, nothing settled, no run to end", async () => {
    const start = () => {
      throw new AppError("over_capacity", "the prover is running its maximum of 1 sessions");
    };
    const { answer, seen, call } = await runScripted({ start });
    await expect(answer).rejects.toMatchObject({ code: "over_capacity" });
    // The id was never claimed: it is free for a retry.
    await delivery.claim(call.requestId);
    expect(seen).toMatchObject({ discard: 0, end: 0 });
  });

  test("the shutdown's end abandons a proof still running: its id gets shutting_down, and drained() sees it end", async () => {
    let release!: () => void;
    attestation = () => new Promise<void>((resolve) => (release = resolve));
    try {
      const { answer, seen, call } = await runScripted({});
      expect((await answer).proofFollows).toBe(true);
      expect(await lifecycle.drained(50)).toBe(false);
      shutdown.abort();
      expect(await outcomeOf(call.requestId)).toMatchObject({ code: "shutting_down" });
      expect(await lifecycle.drained(5_000)).toBe(true);
      expect(seen).toMatchObject({ aborted: true, end: 1 });
      release();
    } finally {
      attestation = async () => undefined;
    }
  });
});
