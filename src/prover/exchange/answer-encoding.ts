/**
 * The target is asked for `accept-encoding: identity`. An answer encoded anyway (src/http1/codings.ts) cannot be
 * redacted, so it is refused: no proof is made. The notary applies the same rule to what it signs.
 */
import { AppError } from "../../core/errors.ts";
import { answerCodings, codingsText } from "../../http1/codings.ts";

/** Throws `target_encoding_refused` when the answer is encoded. */
export function refuseEncodedAnswer(recv: Uint8Array): void {
  const codings = answerCodings(recv);
  if (codings.length === 0) return;
  throw new AppError(
    "target_encoding_refused",
    `the target answered encoded (${codingsText(codings)}) although identity was asked; an encoded answer cannot be redacted, so no proof is made`,
  );
}
