import { describe, expect, test } from "bun:test";
import type { HeaderField } from "../../../src/core/exchange.ts";
import { refuseUnanswerableHead } from "../../../src/prover/exchange/answer-head.ts";
import { appErrorOf } from "../../../testkit/app-error.ts";

const refusal = (status: number, headers: HeaderField[] = []) => appErrorOf(() => refuseUnanswerableHead({ status, headers }));

describe("refuseUnanswerableHead", () => {
  test("200-599 pass; 101, the other 1xx and anything past 599 are target_request_failed, naming the status", () => {
    for (const status of [200, 204, 304, 404, 599]) expect(refusal(status)).toBeUndefined();
    for (const status of [0, 100, 101, 103, 199, 600, 999]) {
      expect(refusal(status)).toEqual({
        code: "target_request_failed",
        message: `the target answered with status ${status}, which cannot be passed on to the client (200-599)`,
      });
    }
  });

  test("fields: a token's name, any bytes but NUL, CR and LF in the value (one char per byte); another is refused by its position, never its text", () => {
    const fine: HeaderField[] = [["Content-Type", "text/plain"], ["X-Token!#$%&'*+-.^_`|~09", "\u00e2\u0082\u00ac caf\u00e9 \u0080\u00ff"], ["x-empty", ""]];
    expect(refusal(200, fine)).toBeUndefined();
    for (const bad of [["x y", "v"], ["", "v"], ["x:y", "v"], ["x\u00e9", "v"], ["x", "a\u0000b"], ["x", "a\rb"], ["x", "a\nb"]] as HeaderField[]) {
      expect(refusal(200, [...fine, bad])).toEqual({
        code: "target_request_failed",
        message: "the target's answer has a header field (number 4 of its head) that no HTTP response can carry: its name is not a token, or its value holds NUL, CR or LF",
      });
    }
  });
});
