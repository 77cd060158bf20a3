import { describe, expect, test } from "bun:test";
import { bytesToBase64 } from "../../../src/base/bytes.ts";
import type { ExchangeRequest } from "../../../src/core/exchange.ts";
import { complementRanges } from "../../../src/core/ranges.ts";
import type { ByteRange } from "../../../src/core/transcript.ts";
import { revealedRequestProblem } from "../../../src/proof/request-rule.ts";
import { LAYOUT_SESSIONS, checkMpcRequest, inProvableLayout, isProvableLayout, provableMpcHidden } from "../../../src/prover/mpc/request-layout.ts";
import { parseRedactions } from "../../../src/redaction/index.ts";
import { appErrorOf } from "../../../testkit/app-error.ts";

/** What an MPC proof reveals of the request the engine wrote, whatever order it wrote the headers in. */

const SERVER = "api.example.com";
const encoder = new TextEncoder();
const HIDDEN_AUTH = parseRedactions(undefined); // Authorization is hidden by default

/** The request as the engine wrote it: the request line, then `lines` in the engine's order, then `body`. */
const written = (lines: string[], body = "", method = "GET /account HTTP/1.1") => encoder.encode(`${method}\r\n${lines.map((line) => `${line}\r\n`).join("")}\r\n${body}`);

/** The notary's verdict on the reveal the prover makes of `sent` with `hidden` (the rule it holds every MPC proof to). */
function notaryVerdict(sent: Uint8Array, hidden: readonly ByteRange[]): string | null {
  const revealed = complementRanges(sent.length, hidden).map((range) => ({ ...range, data: bytesToBase64(sent.subarray(range.start, range.end)) }));
  return revealedRequestProblem({ length: sent.length, revealed }, SERVER, { maxHiddenSpanBytes: sent.length });
}

const span = (sent: Uint8Array, text: string): ByteRange => {
  const start = Buffer.from(sent).indexOf(text);
  if (start < 0) throw new Error(`no ${text}`);
  return { start, end: start + text.length };
};
const textOf = (sent: Uint8Array, range: ByteRange) => Buffer.from(sent.subarray(range.start, range.end)).toString("latin1");

describe("the reveal of the engine's layout", () => {
  test("a hidden value written after Host: it and every header after it are one hidden block; the notary signs it", () => {
    const sent = written([`host: ${SERVER}`, "accept: */*", "authorization: Bearer tok-123456", "x-account: 42", "connection: close"]);
    const hidden = provableMpcHidden(sent, [span(sent, "Bearer tok-123456")])!;
    expect(hidden.map((range) => textOf(sent, range))).toEqual(["Bearer tok-123456\r\nx-account: 42\r\nconnection: close"]);
    expect(notaryVerdict(sent, hidden)).toBeNull();
    // Revealed as the patterns alone hid it, the headers after the credential would be refused.
    expect(notaryVerdict(sent, [span(sent, "Bearer tok-123456")])).toContain("after a hidden span");
  });

  test("two hidden values with revealed headers between and after them: one block, the notary signs it", () => {
    const sent = written([`host: ${SERVER}`, "cookie: sid=abc123", "accept: */*", "authorization: Bearer tok-123456", "accept-encoding: identity"]);
    const hidden = provableMpcHidden(sent, [span(sent, "sid=abc123"), span(sent, "Bearer tok-123456")])!;
    expect(hidden).toHaveLength(1);
    expect(textOf(sent, hidden[0]!)).toStartWith("sid=abc123\r\n");
    expect(textOf(sent, hidden[0]!)).toEndWith("accept-encoding: identity");
    expect(notaryVerdict(sent, hidden)).toBeNull();
  });

  test("the hidden value last, or nothing hidden: the reveal is the patterns' own", () => {
    const last = written([`host: ${SERVER}`, "accept: */*", "authorization: Bearer tok-123456"]);
    expect(provableMpcHidden(last, [span(last, "Bearer tok-123456")])).toEqual([span(last, "Bearer tok-123456")]);
    expect(provableMpcHidden(last, [])).toEqual([]);
  });

  test("Host written after a hidden value: no reveal proves it, and a GET is exchanged again", () => {
    const sent = written(["authorization: Bearer tok-123456", `host: ${SERVER}`, "accept: */*"]);
    expect(provableMpcHidden(sent, [span(sent, "Bearer tok-123456")])).toBeNull();
    expect(isProvableLayout(sent, HIDDEN_AUTH)).toBe(false);
    const hostFirst = written([`host: ${SERVER}`, "authorization: Bearer tok-123456", "accept: */*"]);
    expect(isProvableLayout(hostFirst, HIDDEN_AUTH)).toBe(true);
  });

  test("a body hidden whole after revealed headers keeps its span", () => {
    const json = '{"pin":"1234"}';
    const sent = written([`host: ${SERVER}`, "content-type: application/json", `content-length: ${json.length}`], json, "POST /login HTTP/1.1");
    const body = span(sent, json);
    expect(provableMpcHidden(sent, [body])).toEqual([body]);
    expect(notaryVerdict(sent, [body])).toBeNull();
  });
});

describe("refused before anything is sent (400)", () => {
  const request = (change: Partial<ExchangeRequest>): ExchangeRequest => ({
    method: "GET",
    pathAndQuery: "/account?key=s3cret-value",
    headers: [["host", SERVER], ["accept", "*/*"]],
    body: undefined,
    ...change,
  });
  const refusal = (exchange: ExchangeRequest, redacted: string) => appErrorOf(() => checkMpcRequest(exchange, parseRedactions(redacted)));

  test("a hidden query value or path segment: the request line is revealed whole", () => {
    for (const entry of ["res:query:key", "res:path:1"]) {
      expect(refusal(request({}), entry)).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("request line") });
    }
  });

  test("another method than GET with a hidden header value: it is not sent twice, so proxy mode is named", () => {
    for (const method of ["DELETE", "PUT"] as const) {
      const error = appErrorOf(() => checkMpcRequest(request({ method, pathAndQuery: "/item/7", headers: [["host", SERVER], ["x-api-key", "k-1234567"]] }), []));
      expect(error?.code).toBe("invalid_redaction");
      expect(error!.message).toContain(`a ${method} is not sent twice`);
      expect(error!.message).toContain("proxy mode (T-PROOF-MODE: proxy)");
      // Without hidden header values it goes.
      expect(() => checkMpcRequest(request({ method, pathAndQuery: "/item/7" }), [])).not.toThrow();
    }
  });

  test("a body with a hidden header value, or holding a hidden value, names what proves it", () => {
    const post = request({ method: "POST", pathAndQuery: "/transfer", body: { to: "bob", amount: 100 } });
    expect(refusal({ ...post, headers: [...post.headers, ["authorization", "Bearer tok-123456"]] }, "")).toMatchObject({
      code: "invalid_redaction",
      message: expect.stringContaining("proxy mode"),
    });
    expect(refusal(post, "req:body:to")).toMatchObject({ code: "invalid_redaction", message: expect.stringContaining("Hide the body whole") });
  });

  test("what can be proven passes: a hidden header without a body, a body hidden whole, nothing hidden", () => {
    expect(() => checkMpcRequest(request({ pathAndQuery: "/account", headers: [["host", SERVER], ["authorization", "Bearer tok-123456"]] }), [])).not.toThrow();
    expect(() => checkMpcRequest(request({ method: "POST", pathAndQuery: "/login", body: { pin: "1234" } }), parseRedactions("req:body:"))).not.toThrow();
    expect(() => checkMpcRequest(request({ method: "POST", pathAndQuery: "/account?user=42", body: { a: 1 } }), [])).not.toThrow();
  });

  test("a query parameter whose name says it holds a secret is hidden by default, so refused unless revealed on purpose", () => {
    const keyed = request({ pathAndQuery: "/v1/quote?api_key=s3cret-value&symbol=ETH" });
    const error = appErrorOf(() => checkMpcRequest(keyed, []));
    expect(error?.code).toBe("invalid_redaction");
    expect(error!.message).toContain('query parameter "api_key" looks like a secret');
    expect(error!.message).toContain("reveal:res:query:api_key");
    expect(error!.message).not.toContain("s3cret-value");
    expect(() => checkMpcRequest(keyed, parseRedactions("reveal:res:query:api_key"))).not.toThrow();
  });
});

describe("a GET exchanged again until the engine's layout can be proven", () => {
  /** Exchanges whose layouts are these, in turn: true where the engine wrote Host before the hidden values. */
  function exchanges(layouts: boolean[]) {
    type Made = { provable: boolean; n: number };
    let made = 0;
    const discarded: number[] = [];
    return {
      run: (): Promise<Made> => Promise.resolve({ provable: layouts[made++] ?? true, n: made }),
      options: (canRepeat: boolean) => ({ provable: (r: Made) => r.provable, canRepeat, discard: (r: Made) => void discarded.push(r.n) }),
      discarded,
      made: () => made,
    };
  }

  test("unprovable layouts are discarded and the GET exchanged again; the first provable one is kept", async () => {
    const e = exchanges([false, false, true, false]);
    expect(await inProvableLayout(e.run, e.options(true))).toEqual({ result: { provable: true, n: 3 }, sessions: 3 });
    expect(e.discarded).toEqual([1, 2]);
  });

  test("a request that cannot be repeated keeps its one exchange, provable or not (its reveal then says why)", async () => {
    const e = exchanges([false]);
    expect(await inProvableLayout(e.run, e.options(false))).toEqual({ result: { provable: false, n: 1 }, sessions: 1 });
    expect(e.discarded).toEqual([]);
  });

  test("at most LAYOUT_SESSIONS sessions: the last is kept and proven or refused by the reveal", async () => {
    const e = exchanges(Array(LAYOUT_SESSIONS + 5).fill(false));
    expect((await inProvableLayout(e.run, e.options(true))).sessions).toBe(LAYOUT_SESSIONS);
    expect(e.made()).toBe(LAYOUT_SESSIONS);
    expect(e.discarded).toHaveLength(LAYOUT_SESSIONS - 1);
  });
});
