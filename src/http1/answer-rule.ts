/**
 * What a notary signs as "the server's answer": one complete HTTP/1.1 answer and nothing else, checked on the bytes
 * the notary itself decrypted (proxy mode) or verified (MPC mode, as far as it saw them). A status line, then a body
 * that its framing shows whole: a Content-Length body of exactly that length, a chunked body through its last chunk
 * and trailers, or a body ended by the connection only when the connection's end was seen (the server's close_notify,
 * or the target's TCP FIN). Nothing may follow. Refused: an interim 1xx or 101 answer (what follows is another answer,
 * or not HTTP/1.1), an encoded answer (it cannot be redacted: codings.ts), an answer that cannot be framed one way.
 *
 * A revealed request must be one request too: bytes after it are a second, pipelined request, whose answer would
 * follow the first. Its method matters: the answer to HEAD has no body, whatever its Content-Length says.
 */
import { AppError, type ErrorCode } from "../core/errors.ts";
import { codingsText } from "./codings.ts";
import { MessageProblem, type ProblemKind, type SeenBytes, chunkedEnd, fieldItems, framingOf, readHead } from "./strict-message.ts";

/** How the signed answer's body was framed; `no-body`: its status (204, 304) or the HEAD request says it has none. */
export type ResponseFraming = "content-length" | "chunked" | "close" | "no-body";
export const RESPONSE_FRAMINGS: readonly ResponseFraming[] = ["content-length", "chunked", "close", "no-body"];

/**
 * Whether the notary saw the server end the connection of its own accord (its close_notify, or the target's FIN on
 * the relay, neither provoked by the client), or why it cannot say so.
 */
export type ConnectionEnd = { closed: true } | { closed: false; why: string };

export interface AnswerContext {
  end: ConnectionEnd;
  /** The request's method, when the notary read the request. */
  requestMethod?: string;
}

const ANSWER_CODES: Record<ProblemKind, ErrorCode> = {
  incomplete: "answer_incomplete",
  unseen: "answer_incomplete",
  malformed: "answer_malformed",
  extra: "answer_not_single",
  encoded: "answer_encoded",
};

/** Runs a rule, turning its MessageProblem into the AppError `codes` names, its message prefixed. */
function refusing<T>(codes: Record<ProblemKind, ErrorCode>, prefix: string, rule: () => T): T {
  try {
    return rule();
  } catch (error) {
    if (error instanceof MessageProblem) throw new AppError(codes[error.kind], `${prefix}: ${error.message}`);
    throw error;
  }
}

const STATUS_LINE = /^HTTP\/1\.[01] ([0-9]{3})(?: [^\r\n]*)?$/;

/** The answer's framing once it passes the rule; throws answer_incomplete, answer_not_single, answer_encoded or answer_malformed. */
export function checkAnswer(view: SeenBytes, context: AnswerContext): ResponseFraming {
  return refusing(ANSWER_CODES, "the answer is not one complete HTTP/1.1 answer", () => {
    const head = readHead(view, "answer");
    if (!view.isSeen(head.startLine)) throw new MessageProblem("unseen", "its status line is hidden");
    const status = STATUS_LINE.exec(head.startText)?.[1];
    if (status === undefined) throw new MessageProblem("malformed", "its first line is not an HTTP/1.1 status line");
    if (status.startsWith("1")) {
      throw new MessageProblem("extra", `it is an interim answer (status ${status}): what follows is another answer${status === "101" ? ", or not HTTP/1.1 at all" : ""}`);
    }
    const codings = fieldItems(view, head, "content-encoding").filter((coding) => coding !== "identity");
    if (codings.length > 0) throw new MessageProblem("encoded", `it is encoded (${codingsText(codings)}), so it cannot be redacted`);
    const framing = framingOf(view, head);
    let end: number;
    let framed: ResponseFraming;
    if (status === "204" || status === "304" || context.requestMethod === "HEAD") {
      [end, framed] = [head.bodyStart, "no-body"];
    } else if (framing.kind === "chunked") {
      [end, framed] = [chunkedEnd(view, head.bodyStart), "chunked"];
    } else if (framing.kind === "length") {
      [end, framed] = [head.bodyStart + framing.length, "content-length"];
      if (end > view.bytes.length) throw new MessageProblem("incomplete", `its body has ${view.bytes.length - head.bodyStart} of the ${framing.length} bytes its Content-Length says`);
    } else {
      if (!context.end.closed) throw new MessageProblem("incomplete", `its body ends with the connection, but ${context.end.why}`);
      [end, framed] = [view.bytes.length, "close"];
    }
    if (end < view.bytes.length) throw new MessageProblem("extra", `${view.bytes.length - end} bytes follow its end`);
    return framed;
  });
}

const REQUEST_CODES: Record<ProblemKind, ErrorCode> = {
  incomplete: "invalid_body",
  unseen: "invalid_body",
  malformed: "invalid_body",
  extra: "answer_not_single",
  encoded: "invalid_body",
};

const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) [^ ]+ HTTP\/1\.[01]$/;

/** The method of a request that is one whole request and nothing more; throws answer_not_single or invalid_body. */
export function checkSingleRequest(view: SeenBytes): string {
  return refusing(REQUEST_CODES, "request refused", () => {
    const head = readHead(view, "request");
    if (!view.isSeen({ start: 0, end: Math.max(1, head.startText.indexOf(" ")) })) throw new MessageProblem("unseen", "its method is hidden");
    const method = REQUEST_LINE.exec(head.startText)?.[1];
    if (method === undefined) throw new MessageProblem("malformed", "its first line is not an HTTP/1.1 request line");
    const framing = framingOf(view, head);
    const end = framing.kind === "chunked" ? chunkedEnd(view, head.bodyStart) : head.bodyStart + (framing.kind === "length" ? framing.length : 0);
    if (end > view.bytes.length) throw new MessageProblem("incomplete", "its body is shorter than its Content-Length says");
    if (end < view.bytes.length) throw new MessageProblem("extra", `${view.bytes.length - end} bytes follow the request's end: a second, pipelined request would get a second answer`);
    return method;
  });
}
