/**
 * The target is asked for `accept-encoding: identity`. An answer encoded anyway (a content coding, or a
 * transfer coding other than chunked) cannot be redacted: a secret compressed into its body matches no
 * pattern and no echo, and revealing the body would reveal it. Such an answer is refused: no proof is made.
 */
import { AppError } from "../../errors.ts";
import { listValues, parseHttpMessage } from "../../http1/message.ts";

/** A coding's name is the target's text: named in the error only when it looks like a coding's name. */
const codingName = /^[a-z0-9!#$%&'*+.^_`|~-]{1,32}$/;

/** The codings the answer's fields declare besides identity and chunked (lower-cased, each once). */
export function answerCodings(recv: Uint8Array): string[] {
  const message = parseHttpMessage(recv);
  const content = listValues(recv, message.headers, "content-encoding");
  const transfer = listValues(recv, message.headers, "transfer-encoding").filter((coding) => coding !== "chunked");
  return [...new Set([...content, ...transfer])].filter((coding) => coding !== "" && coding !== "identity");
}

/** Throws `target_encoding_refused` when the answer is encoded. */
export function refuseEncodedAnswer(recv: Uint8Array): void {
  const codings = answerCodings(recv);
  if (codings.length === 0) return;
  const named = codings.map((coding) => (codingName.test(coding) ? coding : "an unnamed coding")).join(", ");
  throw new AppError(
    "target_encoding_refused",
    `the target answered encoded (${named}) although identity was asked; an encoded answer cannot be redacted, so no proof is made`,
  );
}
