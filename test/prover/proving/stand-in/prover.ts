/**
 * The stand-in mode's prover side (src/prover/proving/mode.ts): a session with the notary for the target, the
 * request's bytes over the mode's socket, the answer back from it; the notary saw everything, so the reveal only
 * declares what the proof hides.
 */
import type { AnswerHead } from "../../../../src/core/exchange.ts";
import { AppError } from "../../../../src/core/errors.ts";
import { parseHttpMessage } from "../../../../src/http1/message.ts";
import { serializeRequest } from "../../../../src/http1/request.ts";
import * as v from "valibot";
import { type ModeHeaders, type ModeRun, type ProofCall, type ProvingMode, ownHeaders } from "../../../../src/prover/proving/mode.ts";
import type { ProvingContext, ProvingModeBackend } from "../../../../src/prover/proving/registry.ts";
import { STAND_IN, type StandInSessionRequest } from "./facts.ts";

const latin1 = new TextDecoder("latin1");

/** The answer's status and header fields. */
function answerHead(recv: Uint8Array): AnswerHead {
  const message = parseHttpMessage(recv);
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(latin1.decode(recv.subarray(message.startLine.start, message.startLine.end)))?.[1];
  if (!status) throw new AppError("target_request_failed", "the target's answer is not an HTTP/1.1 response");
  const text = (range: { start: number; end: number }) => latin1.decode(recv.subarray(range.start, range.end));
  return { status: Number(status), headers: message.headers.map(({ name, value }) => [text(name), text(value)]) };
}

/** Sends the request over the session's socket and reads the answer until the notary closes it. */
async function exchangeOverSocket(url: string, sent: Uint8Array): Promise<Uint8Array> {
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  const chunks: Uint8Array[] = [];
  return await new Promise((resolve, reject) => {
    ws.onopen = () => ws.send(sent);
    ws.onmessage = (event) => chunks.push(new Uint8Array(event.data as ArrayBuffer));
    ws.onerror = () => reject(new AppError("notary_unavailable", "the stand-in socket failed"));
    ws.onclose = (event) => (event.code === 1000 ? resolve(Buffer.concat(chunks)) : reject(new AppError("target_request_failed", event.reason)));
  });
}

function run(context: ProvingContext, call: ProofCall, label: string | undefined): ModeRun {
  let sessionId: string | undefined;
  return {
    async exchange(_log, idClaimed) {
      const request: StandInSessionRequest = { serverName: call.target.serverName, port: call.target.port };
      sessionId = await context.notary.createSession(STAND_IN.name, request);
      await idClaimed;
      const sent = serializeRequest(call.exchange);
      const recv = await exchangeOverSocket(context.notary.socketUrl(STAND_IN.name, sessionId), sent);
      return { answer: answerHead(recv), sent, recv, notarySessionId: sessionId, answerHeaders: label === undefined ? [] : [["t-stand-in-label", label]] };
    },
    reveal: async (redaction) => ({ redactions: redaction.declared }),
    discard: () => void (sessionId && context.notary.release(STAND_IN.name, sessionId)),
    end: () => {},
  };
}

/**
 * Its own `/proxy` headers, as a real mode would declare an option of its own: `T-STAND-IN-LABEL` is read by the
 * route with the others and comes back on the answer.
 */
const STAND_IN_HEADERS = {
  request: {
    "t-stand-in-label": v.optional(v.pipe(v.string(), v.regex(/^[a-z]{1,16}$/, "T-STAND-IN-LABEL must be 1-16 letters a-z"), v.description("stand-in: a label echoed on the answer"))),
  },
  answer: { "T-STAND-IN-LABEL": v.pipe(v.string(), v.description("stand-in: the call's T-STAND-IN-LABEL")) },
} satisfies ModeHeaders;

function standInMode(context: ProvingContext): ProvingMode {
  return {
    facts: STAND_IN,
    headers: STAND_IN_HEADERS,
    prepare(call) {
      const label = ownHeaders(call, STAND_IN_HEADERS)["t-stand-in-label"];
      return { deadlineMs: 30_000, start: () => run(context, call, label) };
    },
  };
}

/** The mode's prover side, as given to a prover. */
export const standInProver: ProvingModeBackend = { facts: STAND_IN, create: standInMode };
