/**
 * What proxy mode writes of a request and shows the notary, decided before anything is sent: on TLS 1.3 the request
 * goes out in epochs (src/tls/client/epochs.ts), cut with a key update at each hidden value, so the hidden values
 * must be known before the exchange. They are what the redaction hides in the request alone (src/redaction/: the
 * default-hidden credentials, each `req:*` entry, their echoes within the request); what the answer adds later (an
 * echo in the request of a value hidden in the answer) the notary sees and leaves out of the proof itself.
 * In epochs the request is laid out as the notary's request rule proves it (src/proof/request-rule.ts: no revealed
 * byte after a hidden one): headers with hidden values are written last, as one hidden block, and a body after them
 * or holding a hidden value must be hidden whole. Refused up front (400, nothing sent): a hidden value before the
 * end of the Host line or too many of them (src/http1/request-epochs.ts), one longer than PROVER_PROXY_MAX_HIDDEN_SPAN,
 * a body that cannot be proven as asked, and with `T-PROXY-REVEAL: none` any pattern naming the request (it is hidden
 * whole). computeRedactions merges touching ranges, as the epochs do.
 */
import type { ExchangeRequest } from "../../core/exchange.ts";
import type { ByteRange } from "../../core/transcript.ts";
import type { DeclaredRedaction } from "../../proof/format.ts";
import { AppError } from "../../core/errors.ts";
import { checkHiddenAfterHost, requestParts } from "../../http1/request-epochs.ts";
import { serializeRequest } from "../../http1/request.ts";
import type { RedactionPattern } from "../../redaction/index.ts";
import type { RequestPart } from "../../tls/client/exchange.ts";
import type { ProxyReveal } from "./headers.ts";
import { checkProvableBody, checkSecretQuery, declareLayout, headEndOf, hiddenHeaderNames, hiddenRequestRanges as hiddenRanges } from "../exchange/request-layout.ts";
import { refuseRequestPatterns } from "./hidden-request.ts";

/**
 * What the notary sees of the request: nothing (`none`), all of it (`request`), or all but its hidden values
 * (`epochs`, the default; TLS 1.3 only: on TLS 1.2, where keys cannot change mid-connection, it sees nothing).
 */
export type RequestReveal = "none" | "epochs" | "request";

export interface RequestPlan {
  /** The request's bytes, as sent. */
  request: Uint8Array;
  /** The request cut into revealed and hidden parts for our TLS 1.3 client (one revealed part unless `epochs`). */
  parts: RequestPart[];
  reveal: RequestReveal;
}

const BODY_OPTIONS =
  "Hide the body whole (T-REDACTED: req:body:, the proof shows its length), or send T-PROXY-REVEAL: request (the notary sees the request whole; the proof still hides the values)";

/**
 * The hidden ranges as the request rule proves them: those of the head (written last) as one block up to the end of
 * the last hidden value, its line break and the blank line revealed; a body after them, or holding a hidden value,
 * must be hidden whole (else invalid_redaction).
 */
function provableHidden(request: Uint8Array, hidden: readonly ByteRange[]): ByteRange[] {
  checkProvableBody(request, hidden, BODY_OPTIONS);
  const headEnd = headEndOf(request);
  const head = hidden.filter((range) => range.start < headEnd);
  const body = hidden.filter((range) => range.start >= headEnd);
  if (head.length === 0) return [...body];
  return [{ start: head[0]!.start, end: head.at(-1)!.end }, ...body];
}

/**
 * The redactions a proof of this plan declares: the patterns' own, and one for what the layout hid beside them (the
 * block of hidden headers runs from the first hidden value to the last).
 */
export function planRedactions(plan: RequestPlan, declared: readonly DeclaredRedaction[]): DeclaredRedaction[] {
  if (plan.reveal !== "epochs") return [...declared];
  let offset = 0;
  const hidden: ByteRange[] = [];
  for (const part of plan.parts) {
    if (part.hidden) hidden.push({ start: offset, end: offset + part.bytes.length });
    offset += part.bytes.length;
  }
  return declareLayout(declared, hidden);
}

/** Refuses a hidden value longer than the bound a notary holds a revealed request to. */
function checkLengths(ranges: readonly ByteRange[], maxHiddenSpanBytes: number): void {
  const longest = Math.max(0, ...ranges.map((range) => range.end - range.start));
  if (longest <= maxHiddenSpanBytes) return;
  throw new AppError(
    "invalid_redaction",
    `the request hides ${longest} bytes in one value; proxy mode hides at most ${maxHiddenSpanBytes} (PROVER_PROXY_MAX_HIDDEN_SPAN, the notary's proxy.max_hidden_span): hidden bytes could hold anything, a second request included. Send T-PROXY-REVEAL: none (the request hidden whole) or use MPC mode`,
  );
}

/**
 * The request's bytes and how they are shown; throws invalid_redaction when the proof could not show them so. With
 * `T-PROXY-REVEAL: request` the notary sees every byte and leaves the hidden values out of the proof itself: the
 * proof keeps the same rule, so the same values are refused.
 */
export function planRequest(
  exchange: ExchangeRequest,
  patterns: readonly RedactionPattern[],
  proxyReveal: ProxyReveal | undefined,
  maxHiddenSpanBytes: number,
): RequestPlan {
  const request = serializeRequest(exchange);
  const whole: RequestPart[] = [{ bytes: request, hidden: false }];
  if (proxyReveal === "none") {
    refuseRequestPatterns(patterns);
    return { request, parts: whole, reveal: "none" };
  }
  checkSecretQuery(request, patterns, "send T-PROXY-REVEAL: none (the request hidden whole from the notary and the proof)");
  const hidden = hiddenRanges(request, patterns);
  if (proxyReveal === "request") {
    checkHiddenAfterHost(request, hidden);
    checkLengths(hidden, maxHiddenSpanBytes);
    return { request, parts: whole, reveal: "request" };
  }
  // Headers with hidden values go last, so that every revealed header precedes the first hidden byte.
  const last = hiddenHeaderNames(request, hidden);
  const laidOut = last.size === 0 ? request : serializeRequest(exchange, last);
  const provable = provableHidden(laidOut, last.size === 0 ? hidden : hiddenRanges(laidOut, patterns));
  const parts = requestParts(laidOut, provable);
  checkLengths(provable.filter((range) => range.end <= headEndOf(laidOut)), maxHiddenSpanBytes);
  return { request: laidOut, parts, reveal: "epochs" };
}
