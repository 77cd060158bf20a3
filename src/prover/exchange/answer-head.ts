/**
 * The client gets the target's answer as an HTTP response of its own. A response's status is 200-599, a field's name
 * a token and its value free of NUL, CR and LF: a target that answers 101 (a protocol the prover does not switch to),
 * a number outside the codes HTTP defines, or a field no response can carry is refused with a clear error before any
 * proof starts, never passed on altered (a Response or its Headers refuse them).
 */
import type { AnswerHead } from "../../core/exchange.ts";
import { AppError } from "../../core/errors.ts";
import { isHttpToken } from "../../core/http-token.ts";

const FORBIDDEN_IN_VALUE = /[\0\r\n]/;

export function refuseUnanswerableHead({ status, headers }: AnswerHead): void {
  if (status < 200 || status > 599) {
    throw new AppError("target_request_failed", `the target answered with status ${status}, which cannot be passed on to the client (200-599)`);
  }
  // The field's position, not its text: a target's bytes are not echoed in an error.
  const bad = headers.findIndex(([name, value]) => !isHttpToken(name) || FORBIDDEN_IN_VALUE.test(value));
  if (bad >= 0) {
    throw new AppError("target_request_failed", `the target's answer has a header field (number ${bad + 1} of its head) that no HTTP response can carry: its name is not a token, or its value holds NUL, CR or LF`);
  }
}
