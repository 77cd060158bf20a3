/**
 * The codings an answer declares besides identity and chunked: a content coding (gzip, br, …) or a transfer coding
 * other than chunked. Such an answer cannot be redacted (a secret compressed into its body matches no pattern), so
 * the prover refuses it (`target_encoding_refused`) and the notary refuses to sign it (`answer_encoded`).
 */
import { listValues, parseHttpMessage } from "./message.ts";

/** A coding's name is the target's text: named in a message only when it looks like a coding's name. */
const codingName = /^[a-z0-9!#$%&'*+.^_`|~-]{1,32}$/;

/** The codings the answer's fields declare besides identity and chunked (lower-cased, each once). */
export function answerCodings(recv: Uint8Array): string[] {
  const message = parseHttpMessage(recv);
  const content = listValues(recv, message.headers, "content-encoding");
  const transfer = listValues(recv, message.headers, "transfer-encoding").filter((coding) => coding !== "chunked");
  return [...new Set([...content, ...transfer])].filter((coding) => coding !== "" && coding !== "identity");
}

/** The codings as a message may show them: names that look like names, the rest as "an unnamed coding". */
export const codingsText = (codings: readonly string[]): string =>
  codings.map((coding) => (codingName.test(coding) ? coding : "an unnamed coding")).join(", ");
