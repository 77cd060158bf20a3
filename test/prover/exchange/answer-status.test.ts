import { describe, expect, test } from "bun:test";
import { refuseUnanswerableStatus } from "../../../src/prover/exchange/answer-status.ts";
import { appErrorOf } from "../../../testkit/app-error.ts";

describe("refuseUnanswerableStatus", () => {
  test("200-599 pass; 101, the other 1xx and anything past 599 are target_request_failed, naming the status", () => {
    for (const status of [200, 204, 304, 404, 599]) expect(appErrorOf(() => refuseUnanswerableStatus(status))).toBeUndefined();
    for (const status of [0, 100, 101, 103, 199, 600, 999]) {
      expect(appErrorOf(() => refuseUnanswerableStatus(status))).toEqual({
        code: "target_request_failed",
        message: `the target answered with status ${status}, which cannot be passed on to the client (200-599)`,
      });
    }
  });
});
