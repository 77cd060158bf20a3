import { describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import { parseHeaders } from "../../../src/http/route.ts";
import * as v from "valibot";
import { ProxyHeaders, callHeadersOf } from "../../../src/prover/call/headers.ts";
import { proxyRouteOffering } from "../../../src/prover/call/routes.ts";
import { MPC_HEADERS } from "../../../src/prover/mpc/headers.ts";
import { PROXY_MODE_HEADERS } from "../../../src/prover/proxy-mode/headers.ts";

const URL_ = "https://api.example.com:8443/v1/data?x=1";
const ID = "8ED79A9E-0C2B-4E6F-9D7E-1C2B3A4D5E6F";
const base = { "t-proxy-url": URL_, "t-request-id": ID };
/** /proxy as a prover offering the built-in modes declares it. */
const declared = proxyRouteOffering([{ mode: "mpc", headers: MPC_HEADERS }, { mode: "proxy", headers: PROXY_MODE_HEADERS }]);
/** The headers as /proxy's declaration parses them (a mode's own among them), then as every mode reads them. */
const parsedHeaders = (init: Record<string, string>) => parseHeaders(declared.headers, new Headers(init)) as Record<string, unknown>;
const parse = (init: Record<string, string>) => callHeadersOf(parseHeaders(declared.headers, new Headers(init)));

function refusal(init: Record<string, string>): AppError {
  try {
    parse(init);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected a refusal");
}

describe("the /proxy headers, parsed once", () => {
  test("a call naming only its target and id: every other header at its default", () => {
    expect(parse(base)).toEqual({
      target: { url: new URL(URL_), serverName: "api.example.com", port: 8443, pathAndQuery: "/v1/data?x=1" },
      requestId: ID.toLowerCase(),
      patterns: [],
      allowUnmatched: false,
      proveFailed: false,
      mode: undefined,
      claims: [],
      announced: {},
    });
  });

  test("each header read in its own way: trimmed and case-blind words, numbers, patterns", () => {
    const headers = parse({
      ...base,
      "T-REDACTED": "search:x, res:body:a.b",
      "T-REDACTED-UNMATCHED": " Allow ",
      "T-PROVE-FAILED-REQ": "TRUE",
      "T-PROOF-MODE": " Proxy ",
      "T-MAX-SENT-DATA": "512",
      "T-MAX-RECV-DATA": " 2048 ",
    });
    expect(headers).toMatchObject({
      patterns: [{ kind: "search", text: "x" }, { kind: "res:body", path: ["a", "b"] }],
      allowUnmatched: true,
      proveFailed: true,
      mode: "proxy",
      announced: { maxSentData: 512, maxRecvData: 2048 },
    });
    expect(parse({ ...base, "t-redacted-unmatched": "refuse", "t-prove-failed-req": "0", "t-proof-mode": "" })).toMatchObject({
      allowUnmatched: false,
      proveFailed: false,
      mode: undefined,
    });
    expect(parse({ ...base, "t-prove-failed-req": "1" }).proveFailed).toBe(true);
    // A fully qualified name: the target is its host without the trailing dot (src/core/server-name.ts).
    expect(parse({ ...base, "t-proxy-url": "https://API.example.com.:8443/v1?x=1" }).target).toMatchObject({ serverName: "api.example.com", port: 8443, pathAndQuery: "/v1?x=1" });
  });

  test.each([
    [{ "t-request-id": ID }, "invalid_header", "T-PROXY-URL is required"],
    [{ "t-proxy-url": "http://api.example.com/", "t-request-id": ID }, "invalid_header", "T-PROXY-URL must be an https URL"],
    [{ "t-proxy-url": "https://api.example.com../", "t-request-id": ID }, "invalid_header", "T-PROXY-URL's host api.example.com.. has an empty label"],
    [{ "t-proxy-url": URL_ }, "invalid_request_id", "T-REQUEST-ID must be a UUID"],
    [{ ...base, "t-request-id": "42" }, "invalid_request_id", "T-REQUEST-ID must be a UUID"],
    [{ ...base, "t-redacted-unmatched": "yes" }, "invalid_header", "T-REDACTED-UNMATCHED must be allow or refuse"],
    [{ ...base, "t-redacted-unmatched": "" }, "invalid_header", "T-REDACTED-UNMATCHED must be allow or refuse"],
    [{ ...base, "t-redacted-unmatched": "allow,refuse" }, "invalid_header", "T-REDACTED-UNMATCHED must be allow or refuse"],
    [{ ...base, "t-prove-failed-req": "maybe" }, "invalid_header", "T-PROVE-FAILED-REQ must be true or false"],
    [{ ...base, "t-proof-mode": "fast mode" }, "invalid_header", "T-PROOF-MODE must be a mode's name: mpc, proxy, or another this prover offers"],
    [{ ...base, "t-proxy-reveal": "all" }, "invalid_header", "T-PROXY-REVEAL must be none or request"],
    [{ ...base, "t-proxy-reveal": "" }, "invalid_header", "T-PROXY-REVEAL must be none or request"],
    [{ ...base, "t-max-recv-data": "lots" }, "invalid_header", "header: t-max-recv-data: must be a whole number of bytes"],
    [{ ...base, "t-max-sent-data": "0" }, "invalid_header", "header: t-max-sent-data: Invalid value: Expected >=1 but received 0"],
  ] as const)("%p is refused: %s", (init, code, message) => {
    expect(refusal(init)).toMatchObject({ code, message });
  });

  test("T-REDACTED's refusal names the entry at fault (its position, never its text)", () => {
    const error = refusal({ ...base, "t-redacted": "search:x, bogus:secret" });
    expect(error.code).toBe("invalid_redaction");
    expect(error.details).toEqual({ entry: 2 });
    expect(error.message).not.toContain("secret");
  });

  test("the first refusal in the schema's order wins", () => {
    expect(refusal({ "t-proxy-url": "ftp://x", "t-request-id": "42" }).code).toBe("invalid_header");
    expect(refusal({ "t-proxy-url": URL_, "t-request-id": "42", "t-redacted": "bogus:x" }).code).toBe("invalid_request_id");
    expect(refusal({ ...base, "t-redacted": "bogus:x", "t-proof-mode": "fast mode" }).code).toBe("invalid_redaction");
  });

  test("claims: T-CLAIM parsed with its own code, the salt and recipient checked, neither echoed in a refusal", () => {
    const parsed = parse({ ...base, "t-claim": "res:body:balance>1000", "t-claim-salt": `0x${"AB".repeat(32)}`, "t-recipient": "0x00000000000000000000000000000000000000FF" });
    expect(parsed.claims).toMatchObject([{ kind: "predicate", subjectText: "res:body:balance", op: ">" }]);
    expect(parsed.claimSalt).toBe(`0x${"AB".repeat(32)}`);
    expect(parsed.recipient).toBe("0x00000000000000000000000000000000000000ff");
    expect(refusal({ ...base, "t-claim": "res:body:balance>" })).toMatchObject({ code: "invalid_claim" });
    const salt = refusal({ ...base, "t-claim-salt": "0xsecretsalt" });
    expect(salt.code).toBe("invalid_header");
    expect(salt.message).not.toContain("secretsalt");
    expect(refusal({ ...base, "t-recipient": "0x1234" }).message).toContain("T-RECIPIENT must be an Ethereum address");
  });

  test("the schema declares every header /proxy reads, the two it needs as required; the modes' own follow", () => {
    expect(Object.keys(ProxyHeaders.entries)).toEqual([
      "t-proxy-url", "t-request-id", "t-redacted", "t-redacted-unmatched", "t-prove-failed-req",
      "t-proof-mode", "t-claim", "t-claim-salt", "t-recipient", "t-quorum", "t-max-sent-data",
      "t-max-recv-data",
    ]);
    const required = Object.entries(ProxyHeaders.entries).filter(([, schema]) => schema.type !== "optional").map(([name]) => name);
    expect(required).toEqual(["t-proxy-url", "t-request-id"]);
    expect(Object.keys(declared.headers.schema.entries)).toEqual([...Object.keys(ProxyHeaders.entries), "t-proxy-reveal"]);
    expect(Object.keys(declared.responses.default.headers)).toEqual(["T-PROOF-ID", "T-PROOF-MODE", "T-SESSION-CLASS", "T-SESSION-RETRIED", "T-LAYOUT-SESSIONS"]);
  });

  test("a mode's own header is read by its schema, like the others", () => {
    expect(parsedHeaders({ ...base, "t-proxy-reveal": " NONE " })["t-proxy-reveal"]).toBe("none");
    expect(parsedHeaders(base)["t-proxy-reveal"]).toBeUndefined();
  });

  test("a mode may not declare a header /proxy or another mode reads, nor one a call must send: the prover does not start", () => {
    const own = (request: v.ObjectEntries, answer: Record<string, v.GenericSchema> = {}) => ({ mode: "tee", headers: { request, answer } });
    expect(() => proxyRouteOffering([own({ "t-redacted": v.optional(v.string()) })])).toThrow("the tee mode declares t-redacted, a /proxy header already");
    expect(() => proxyRouteOffering([{ mode: "proxy", headers: PROXY_MODE_HEADERS }, own({ "t-proxy-reveal": v.optional(v.string()) })])).toThrow(
      "the tee mode declares t-proxy-reveal, a /proxy header already",
    );
    expect(() => proxyRouteOffering([own({ "t-tee-quote": v.string() })])).toThrow("the tee mode's header t-tee-quote must be optional");
    expect(() => proxyRouteOffering([own({}, { "T-PROOF-ID": v.string() })])).toThrow("the tee mode declares T-PROOF-ID, a /proxy answer header already");
  });
});
