/**
 * The client's check that the answer it received is the one its proof shows where the proof reveals it,
 * on realistic transcripts (test/proof/fixtures.ts); and prove()'s refusal to run without trusted keys.
 */
import { describe, expect, test } from "bun:test";
import { answerMismatch } from "../../src/client/answer-check.ts";
import { TlsproofError, prove } from "../../src/client/index.ts";
import { directionHiding, RESPONSE, SECRET_TOKEN, spanOf } from "../proof/fixtures.ts";

const recv = directionHiding(RESPONSE, [spanOf(RESPONSE, SECRET_TOKEN)]);
const body = RESPONSE.slice(RESPONSE.indexOf("\r\n\r\n") + 4);
const answer = (change: { status?: number; headers?: Record<string, string>; body?: string } = {}) => ({
  status: change.status ?? 200,
  // The prover relays no content-length: it describes the MPC connection.
  headers: new Headers(change.headers ?? { "content-type": "application/json" }),
  body: new TextEncoder().encode(change.body ?? body),
});

describe("answerMismatch", () => {
  test("the relayed answer matches the proof", () => {
    expect(answerMismatch(recv, answer())).toBeNull();
  });

  test("hidden bytes are not compared: another token under the redaction still matches", () => {
    expect(answerMismatch(recv, answer({ body: body.replace(SECRET_TOKEN, "tok_OTHER_xyz9999") }))).toBeNull();
  });

  test("another status, header value, body byte or body length is named", () => {
    expect(answerMismatch(recv, answer({ status: 201 }))).toBe("the proof shows status 200, the answer received has 201");
    expect(answerMismatch(recv, answer({ headers: { "content-type": "text/html" } }))).toBe(
      "the proof shows header content-type: application/json, the answer received has another value",
    );
    expect(answerMismatch(recv, answer({ headers: {} }))).toBe("the proof shows header content-type: application/json, the answer received has none");
    expect(answerMismatch(recv, answer({ body: body.replace("1234", "9234") }))).toBe("the body received differs from the proof's at byte 11");
    expect(answerMismatch(recv, answer({ body: `${body} ` }))).toBe("the proof shows a body of 61 bytes, the answer received has 62");
  });

  test("a chunked body is compared de-chunked; a repeated header as fetch joins it", () => {
    const chunked = "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    const direction = directionHiding(chunked, []);
    const relayed = { status: 200, headers: new Headers([["set-cookie", "a=1"], ["set-cookie", "b=2"]]), body: new TextEncoder().encode("hello world") };
    expect(answerMismatch(direction, relayed)).toBeNull();
    expect(answerMismatch(direction, { ...relayed, body: new TextEncoder().encode("hello World") })).toBe("the body received differs from the proof's at byte 6");
    expect(answerMismatch(direction, { ...relayed, headers: new Headers([["set-cookie", "a=1"]]) })).toBe(
      "the proof shows header set-cookie: b=2, the answer received has another value",
    );
  });
});

describe("prove() needs the notary keys it trusts", () => {
  test("none pinned and no opt-in: config_invalid before anything is sent", async () => {
    // Port 9 (discard) is never asked: the refusal comes first.
    const error = await prove({ prover: "http://127.0.0.1:9", url: "https://example.com/" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TlsproofError);
    expect((error as TlsproofError).code).toBe("config_invalid");
    expect((error as TlsproofError).message).toContain("notaryKeys");
  });

  test("a pinned key that is not a key: config_invalid before anything is sent", async () => {
    const error = await prove({ prover: "http://127.0.0.1:9", url: "https://example.com/", notaryKeys: "not a pem" }).catch((e: unknown) => e);
    expect((error as TlsproofError).code).toBe("config_invalid");
  });
});

describe("prove() reads its options as the prover's /proxy declaration reads the headers they become", () => {
  /** What prove() refuses before anything is sent (port 9, discard, is never asked), with the prover's code. */
  const refusedAtOnce = async (options: Partial<Parameters<typeof prove>[0]>) => {
    const error = await prove({ prover: "http://127.0.0.1:9", url: "https://example.com/", notaryKeys: [], trustProverNotaryKeys: true, ...options }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TlsproofError);
    return { code: (error as TlsproofError).code, message: (error as TlsproofError).message };
  };

  test("a value the prover would refuse is its 400, in the option's words", async () => {
    expect(await refusedAtOnce({ quorum: 0 })).toEqual({ code: "invalid_header", message: "quorum must be a whole number from 1 to 16" });
    expect(await refusedAtOnce({ recipient: "0x12" })).toEqual({ code: "invalid_header", message: "recipient must be an Ethereum address: 0x and 40 hex digits" });
    expect(await refusedAtOnce({ url: "http://example.com/" })).toMatchObject({ code: "invalid_header" });
    expect(await refusedAtOnce({ claims: "res:body:" })).toMatchObject({ code: "invalid_claim" });
  });
});
