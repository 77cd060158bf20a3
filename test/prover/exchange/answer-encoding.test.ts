import { describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import { answerCodings, codingsText } from "../../../src/http1/codings.ts";
import { refuseEncodedAnswer } from "../../../src/prover/exchange/answer-encoding.ts";

const answer = (headers: string) => new TextEncoder().encode(`HTTP/1.1 200 OK\r\n${headers}\r\nbody`);

describe("an encoded answer is refused", () => {
  test("identity, chunked, or no coding at all passes", () => {
    for (const headers of ["", "Content-Encoding: identity\r\n", "Transfer-Encoding: chunked\r\n", "Content-Encoding:\r\n"]) {
      expect(answerCodings(answer(headers))).toEqual([]);
      expect(() => refuseEncodedAnswer(answer(headers))).not.toThrow();
    }
  });

  test("a content coding or a transfer coding other than chunked, in any case, in any field, is named", () => {
    expect(answerCodings(answer("Content-Encoding: GZIP\r\n"))).toEqual(["gzip"]);
    expect(answerCodings(answer("content-encoding: identity, br\r\nTransfer-Encoding: deflate, chunked\r\n"))).toEqual(["br", "deflate"]);
    expect(answerCodings(answer("Content-Encoding: identity\r\nContent-Encoding: zstd\r\n"))).toEqual(["zstd"]);
  });

  test("the refusal is target_encoding_refused (502), naming a coding only when it looks like one", () => {
    let refusal: unknown;
    try {
      refuseEncodedAnswer(answer("Content-Encoding: gzip, <script>alert(1)</script>\r\n"));
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(AppError);
    expect((refusal as AppError).code).toBe("target_encoding_refused");
    expect((refusal as AppError).message).toContain("(gzip, an unnamed coding)");
    expect((refusal as AppError).message).not.toContain("script");
  });

  test("a coding is named only when all of it looks like a coding's name, of at most 32 characters", () => {
    expect(codingsText(["x-gzip", "<script", "script>", "a".repeat(33), "a".repeat(32)])).toBe(
      `x-gzip, an unnamed coding, an unnamed coding, an unnamed coding, ${"a".repeat(32)}`,
    );
  });
});
