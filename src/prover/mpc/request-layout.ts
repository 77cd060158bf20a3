/**
 * What an MPC proof reveals of its request so that the notary's request rule proves it (src/proof/request-rule.ts: no
 * revealed byte after a hidden one). The engine (tlsn-wasm alpha.12) takes a request's headers as a hash map and writes
 * them in an order that changes from session to session, so the prover cannot write hidden values last as proxy mode
 * does. Instead its reveal hides, with the hidden values, every header the engine wrote after the first of them (one
 * block to the end of the last header value, declared as req:hidden-header-block). When the engine wrote the Host
 * line after a hidden value, nothing makes the request provable (the hidden bytes may hold a Host of their own): the
 * run exchanges a GET again in a fresh session (a GET that may not be repeated fails saying so).
 * Refused up front (400, nothing sent): a hidden byte in the request line (a query value or a path segment), another
 * method than GET with hidden header values (it is not sent again), a body with hidden header values (the engine
 * writes Content-Length after every header), a body holding a hidden value but not hidden whole.
 */
import type { ExchangeRequest } from "../../core/exchange.ts";
import { AppError } from "../../core/errors.ts";
import type { ByteRange } from "../../core/transcript.ts";
import { isFieldName, parseHttpMessage } from "../../http1/message.ts";
import { serializeRequest } from "../../http1/request.ts";
import type { RedactionPattern } from "../../redaction/index.ts";
import { checkProvableBody, checkSecretQuery, headEndOf, hiddenRequestRanges } from "../exchange/request-layout.ts";

const LF = 0x0a;

/** Where the request line ends (after its line break). */
const requestLineEnd = (request: Uint8Array): number => request.indexOf(LF) + 1;

/** Where the Host line ends (after its line break); 0 without a Host header. */
function hostLineEnd(request: Uint8Array): number {
  const host = parseHttpMessage(request).headers.find((field) => isFieldName(request, field.name, "host"));
  return host ? request.indexOf(LF, host.value.end) + 1 : 0;
}

/** Refuses (400) what no layout of the engine's could prove, before anything is sent. */
export function checkMpcRequest(exchange: ExchangeRequest, patterns: readonly RedactionPattern[]): void {
  const request = serializeRequest(exchange);
  checkSecretQuery(request, patterns, "use proxy mode with T-PROXY-REVEAL: none (the request hidden whole)");
  const hidden = hiddenRequestRanges(request, patterns);
  if (hidden.length === 0) return;
  if (hidden[0]!.start < requestLineEnd(request)) {
    throw new AppError(
      "invalid_redaction",
      "the request hides bytes of its request line (a query value or a path segment), which a proof reveals whole: a hidden byte there may hold the end of the request, and what follows would not be what the server read. Send the secret in a header (hidden with T-REDACTED: req:header:NAME), or use proxy mode with T-PROXY-REVEAL: none (the request hidden whole)",
    );
  }
  const headEnd = headEndOf(request);
  if (exchange.method !== "GET" && hidden[0]!.start < headEnd) {
    throw new AppError(
      "invalid_redaction",
      `MPC mode proves a ${exchange.method} with hidden header values only when its engine happens to write Host before them (it orders headers itself, about one session in two), and a ${exchange.method} is not sent twice: its target may act on it. Use proxy mode (T-PROOF-MODE: proxy), which writes hidden headers last`,
    );
  }
  if (request.length > headEnd && hidden[0]!.start < headEnd) {
    throw new AppError(
      "invalid_redaction",
      "MPC mode cannot prove a request body with hidden header values: its engine writes Content-Length after every header, and no revealed byte after a hidden one is proven to be what the server read. Use proxy mode (T-PROOF-MODE: proxy), which writes hidden headers last, with the body hidden whole (T-REDACTED: req:body:) or T-PROXY-REVEAL: request",
    );
  }
  checkProvableBody(request, hidden, "Hide the body whole (T-REDACTED: req:body:, the proof shows its length), or use proxy mode with T-PROXY-REVEAL: request");
}

/**
 * The request's hidden ranges as a proof of the engine's layout can show them: those of the head widened to one block
 * from the first hidden value to the end of the last header value (the body's stay as they are: checkMpcRequest let
 * through only a body hidden whole); null when the engine wrote the Host line after a hidden value.
 */
export function provableMpcHidden(sent: Uint8Array, hidden: readonly ByteRange[]): ByteRange[] | null {
  const headEnd = headEndOf(sent);
  const head = hidden.filter((range) => range.start < headEnd);
  const body = hidden.filter((range) => range.start >= headEnd);
  if (head.length === 0) return [...hidden];
  if (head[0]!.start < hostLineEnd(sent)) return null;
  const lastValueEnd = parseHttpMessage(sent).headers.at(-1)!.value.end;
  return [{ start: head[0]!.start, end: Math.max(lastValueEnd, head.at(-1)!.end) }, ...body];
}

/**
 * Sessions a GET may take for a layout its hidden values can be proven in: the engine writes Host before a hidden
 * header in about one session of two (with one hidden header; src/engine/header-order.ts makes each session's order a
 * draw of its own), so twelve leave one GET in 4,096 unproven; the call's deadline bounds them all the same.
 */
export const LAYOUT_SESSIONS = 12;

/**
 * Runs `exchange` (one in a fresh session each time) until its layout is `provable`, when the request `canRepeat`
 * (a GET: sent again, it asks nothing new of the server); an unprovable one is `discard`ed before the next. Returns the
 * last exchange (provable, or the one a request that cannot repeat made) and how many sessions it took.
 */
export async function inProvableLayout<T>(
  exchange: () => Promise<T>,
  options: { provable(result: T): boolean; canRepeat: boolean; discard(result: T, sessions: number): void },
): Promise<{ result: T; sessions: number }> {
  for (let sessions = 1; ; sessions++) {
    const result = await exchange();
    if (!options.canRepeat || sessions >= LAYOUT_SESSIONS || options.provable(result)) return { result, sessions };
    options.discard(result, sessions);
  }
}

/** Whether the engine laid the request out so that the patterns' hidden values can be proven. */
export const isProvableLayout = (sent: Uint8Array, patterns: readonly RedactionPattern[]): boolean => provableMpcHidden(sent, hiddenRequestRanges(sent, patterns)) !== null;

/** The failure of a request whose layout cannot be proven, after `sessions` tries. */
export const unprovableLayout = (sessions: number): AppError =>
  new AppError(
    "request_unproven",
    `the MPC engine wrote the Host header after a hidden header value (it orders headers itself, differently in each session${sessions > 1 ? `; so in ${sessions} sessions` : ""}): hidden bytes may hold a Host of their own, so the request is not proven to be what the server read. A GET is tried again in a fresh session; proxy mode (T-PROOF-MODE: proxy) writes hidden headers last`,
  );
