import { describe, expect, test } from "bun:test";
import { type ErrorCode, errorCodes, exitCodeOf, httpStatusOf, retryAfterOf } from "../../src/core/errors.ts";

/** The rules of src/core/errors.ts's table: a status says whose fault a failure is. */
const codes = Object.keys(errorCodes) as ErrorCode[];
const withStatus = (test: (status: number) => boolean) => codes.filter((code) => test(httpStatusOf(code)));

describe("the error table", () => {
  test("a target's failures and limits are 502 or 504: never 404 (a wrong route) nor 500 (our bug)", () => {
    // target_forbidden is the prover's policy refusing the caller's choice of target: the caller's 403.
    const targetCodes = codes.filter((code) => /^(target|tls)_/.test(code) && code !== "target_forbidden");
    expect(targetCodes).toEqual(expect.arrayContaining(["target_unresolvable", "target_unreachable", "tls_unsupported", "tls_untrusted"]));
    const notGateway = [...targetCodes, "response_too_large" as const].filter((code) => ![502, 504].includes(httpStatusOf(code)));
    expect(notGateway).toEqual([]);
    expect(httpStatusOf("target_forbidden")).toBe(403);
  });

  test("500 is our own failure only: an unknown one, the MPC session's, the store's", () => {
    expect(withStatus((status) => status === 500).sort()).toEqual(["internal", "session_failed", "storage_failed"]);
  });

  test("404 is a missing route or record only", () => {
    expect(withStatus((status) => status === 404).sort()).toEqual(["not_found", "unknown_request"]);
  });

  test("503 and 429 always say when to retry, and only they do; a notary out of reach is a 503", () => {
    for (const code of codes) expect({ code, retry: retryAfterOf(code) !== undefined }).toEqual({ code, retry: [503, 429].includes(httpStatusOf(code)) });
    expect(httpStatusOf("notary_unavailable")).toBe(503);
  });

  test("every failure that is not the caller's exits 1; every status is a 4xx or 5xx", () => {
    for (const code of withStatus((status) => status >= 500)) expect({ code, exit: exitCodeOf(code) }).toEqual({ code, exit: 1 });
    for (const code of codes) expect([4, 5]).toContain(Math.floor(httpStatusOf(code) / 100));
  });
});
