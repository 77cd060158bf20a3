import { inOptionWords } from "./callers-words.ts";
import { isErrorCode } from "../core/errors.ts";
import { TlsproofError } from "./errors.ts";
import { errorOf } from "./response.ts";
import { readSseEvents } from "./sse.ts";

/** What a proof stream delivered: the proof text and the key the event named, or why no proof will come. */
export type ProofOutcome =
  | { kind: "proof"; publicKey: string; proofText: string }
  | { kind: "error"; error: TlsproofError };

export interface ProofStream {
  /** Settles with the stream's one event; never rejects. */
  outcome: Promise<ProofOutcome>;
  /** Stops listening (the prover frees the subscriber's place). */
  cancel(): void;
}

/** The one event of `/proof/{id}` as an outcome. */
function outcomeOf(event: { event: string; data: string }, requestId: string): ProofOutcome {
  if (event.event === "message") {
    const bar = event.data.indexOf("|");
    if (bar < 0) return { kind: "error", error: new TlsproofError("bad_response", "proof event without a key part", { requestId }) };
    return { kind: "proof", publicKey: event.data.slice(0, bar), proofText: event.data.slice(bar + 1) };
  }
  if (event.event === "error") {
    try {
      const data = JSON.parse(event.data) as { code?: unknown; message?: unknown };
      if (typeof data.code === "string" && isErrorCode(data.code)) {
        return { kind: "error", error: new TlsproofError(data.code, inOptionWords(String(data.message ?? data.code)), { requestId }) };
      }
    } catch {
      // Falls through to bad_response.
    }
  }
  return { kind: "error", error: new TlsproofError("bad_response", `unexpected proof stream event "${event.event}"`, { requestId }) };
}

/**
 * Subscribes to the proof of `requestId` and resolves once the stream is open (the prover answered with an
 * event stream), so a `/proxy` call made after it cannot be missed. Rejects with the prover's error when
 * it refuses the subscription.
 */
export async function openProofStream(prover: string, requestId: string, headers: Headers, signal: AbortSignal): Promise<ProofStream> {
  const own = new AbortController();
  const both = AbortSignal.any([signal, own.signal]);
  const response = await fetch(new URL(`/proof/${requestId}`, prover), { headers: { ...Object.fromEntries(headers), accept: "text/event-stream" }, signal: both });
  if (!response.ok || !response.headers.get("content-type")?.startsWith("text/event-stream") || !response.body) {
    throw await errorOf(response, "proof stream", requestId);
  }
  const body = response.body;
  const outcome = (async (): Promise<ProofOutcome> => {
    try {
      for await (const event of readSseEvents(body)) return outcomeOf(event, requestId);
      return { kind: "error", error: new TlsproofError("bad_response", "the proof stream ended without an event", { requestId }) };
    } catch (error) {
      return { kind: "error", error: failure(error, both, requestId) };
    }
  })();
  return { outcome, cancel: () => own.abort() };
}

/** A fetch or stream failure as a TlsproofError: `timeout` when the deadline passed, else `network_error`. */
export function failure(error: unknown, signal: AbortSignal, requestId?: string): TlsproofError {
  if (error instanceof TlsproofError) return error;
  if (signal.aborted) {
    return (signal.reason as Error | undefined)?.name === "TimeoutError"
      ? new TlsproofError("timeout", "the prover did not answer in time", { requestId })
      : new TlsproofError("aborted", "the call was aborted", { requestId });
  }
  return new TlsproofError("network_error", `cannot reach the prover: ${(error as Error)?.message ?? String(error)}`, { requestId });
}
