import { describe, expect, test } from "bun:test";
import { TlsproofError, redact, redactionHeader } from "../../src/client/index.ts";
import { parseRedactions } from "../../src/redaction/patterns.ts";

describe("typed redaction patterns", () => {
  test("every kind is written so that the prover's parser reads the same patterns back", () => {
    const patterns = [
      redact.requestHeader("X-Api-Key"),
      redact.requestBody("a.b", "c,d", 0, "back\\slash"),
      redact.requestBody(),
      redact.responseHeader("set-cookie2"),
      redact.responseBody("items", 1, "price"),
      redact.queryParameter("to,ken"),
      redact.pathSegment(3),
      redact.search("a, b\\c"),
      redact.reveal({ kind: "req:header", name: "cookie" }),
    ];
    const header = redactionHeader(patterns);
    expect(header).toBe(
      "req:header:X-Api-Key,req:body:a\\.b.c\\,d.0.back\\\\slash,req:body:,res:header:set-cookie2,res:body:items.1.price," +
        "res:query:to\\,ken,res:path:3,search:a\\, b\\\\c,reveal:req:header:cookie",
    );
    expect(parseRedactions(header)).toEqual(patterns);
  });

  test("what the prover would refuse or read differently is invalid_redaction, naming the position only", () => {
    const cases = [
      [redact.requestHeader("bad name")],
      [redact.requestHeader("ok"), redact.pathSegment(0)],
      [redact.search("")],
      [redact.responseBody("ok"), redact.search(" trimmed-secret ")],
      [redact.requestBody("a", "")],
    ];
    for (const patterns of cases) {
      let error: unknown;
      try {
        redactionHeader(patterns);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(TlsproofError);
      expect((error as TlsproofError).code).toBe("invalid_redaction");
      expect((error as TlsproofError).message).not.toContain("trimmed-secret");
    }
  });
});

describe("redactions written as T-REDACTED writes them", () => {
  test("a string, or strings among built patterns, read as the prover reads the header", () => {
    expect(redactionHeader("res:body:balance, req:header:X-Api-Key")).toBe("res:body:balance,req:header:X-Api-Key");
    expect(redactionHeader([redact.responseBody("a"), "search:x\\,y, res:query:k"])).toBe("res:body:a,search:x\\,y,res:query:k");
  });

  test("a malformed string is the prover's own refusal, naming the entry by position, never its text", () => {
    let error: unknown;
    try {
      redactionHeader("res:body:ok, nope:hunter2-secret");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(TlsproofError);
    expect((error as TlsproofError).code).toBe("invalid_redaction");
    expect((error as TlsproofError).message).toStartWith("T-REDACTED entry 2: unknown kind");
    expect((error as TlsproofError).message).not.toContain("hunter2");
  });
});
