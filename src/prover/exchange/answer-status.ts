/**
 * The client gets the target's answer as an HTTP response of its own, and a response's status is 200-599: a target
 * that answers 101 (a protocol the prover does not switch to) or a number outside the codes HTTP defines is refused
 * with a clear error, never passed on (a Response with such a status cannot be made). The notary's answer rule
 * refuses those answers too, so no proof is lost.
 */
import { AppError } from "../../core/errors.ts";

export function refuseUnanswerableStatus(status: number): void {
  if (status >= 200 && status <= 599) return;
  throw new AppError("target_request_failed", `the target answered with status ${status}, which cannot be passed on to the client (200-599)`);
}
