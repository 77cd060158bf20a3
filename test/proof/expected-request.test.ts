/**
 * A verifier's check that a proof is of the request it expects: the method, and the URL's target, Host, server name
 * and port, where the proof shows them (src/proof/expected-request.ts), through verifyProof's `method` and `url`; and
 * prove()'s refusal to ask for a proxy-mode proof whose request would be hidden unless told to accept one.
 */
import { describe, expect, test } from "bun:test";
import { TlsproofError, prove } from "../../src/client/index.ts";
import { hostOf, requestMismatch } from "../../src/proof/expected-request.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { HIDDEN_REQUEST_LIMIT, verifyProof } from "../../src/proof/verify.ts";
import { directionHiding, hiddenRequestBody, REQUEST, SECRET_API_KEY, sampleBody, spanOf } from "./fixtures.ts";

const sent = directionHiding(REQUEST, [spanOf(REQUEST, SECRET_API_KEY)]);
const asked = { method: "GET", pathAndQuery: "/v1/balance", host: "api.example.com" };

describe("requestMismatch", () => {
  test("the request sent matches the proof; a hidden path segment is skipped", () => {
    expect(requestMismatch(sent, asked)).toBeNull();
    const hiddenSegment = directionHiding(REQUEST, [spanOf(REQUEST, "balance"), spanOf(REQUEST, SECRET_API_KEY)]);
    expect(requestMismatch(hiddenSegment, asked)).toBeNull();
  });

  test("another method, target, target length or Host is named", () => {
    expect(requestMismatch(sent, { ...asked, method: "POST" })).toBe('the proof\'s request method is "GET", not the expected POST');
    expect(requestMismatch(sent, { ...asked, pathAndQuery: "/v1/balanze" })).toBe('the proof\'s request target differs from the expected "/v1/balanze" at byte 9');
    expect(requestMismatch(sent, { ...asked, pathAndQuery: "/v1/balance?x=1" })).toBe('the proof\'s request target is not the expected 15-byte "/v1/balance?x=1"');
    expect(requestMismatch(sent, { ...asked, host: "api.example.com:8443" })).toBe("the proof's request does not show the one Host api.example.com:8443 expected");
    const hiddenHost = directionHiding(REQUEST, [spanOf(REQUEST, "api.example.com")]);
    expect(requestMismatch(hiddenHost, asked)).toBe("the proof's request does not show the one Host api.example.com expected");
  });

  test("an expected target shorter than the proof's is no prefix match: /v1 is not /v1/balance", () => {
    expect(requestMismatch(sent, { ...asked, pathAndQuery: "/v1" })).toBe('the proof\'s request target is not the expected 3-byte "/v1"');
    expect(requestMismatch(sent, { ...asked, pathAndQuery: "/v1/balanc" })).toBe('the proof\'s request target is not the expected 10-byte "/v1/balanc"');
  });

  test("a URL's host is matched only by exactly one Host: two, even both revealed and the right one first, are no match", () => {
    const twoHosts = REQUEST.replace("Host: api.example.com\r\n", "Host: api.example.com\r\nHost: evil.example\r\n");
    expect(requestMismatch(directionHiding(twoHosts, []), asked)).toBe("the proof's request does not show the one Host api.example.com expected");
    const sameTwice = REQUEST.replace("Host: api.example.com\r\n", "Host: api.example.com\r\nHost: api.example.com\r\n");
    expect(requestMismatch(directionHiding(sameTwice, []), asked)).toBe("the proof's request does not show the one Host api.example.com expected");
  });

  test("only what is expected is checked", () => {
    expect(requestMismatch(sent, {})).toBeNull();
    expect(requestMismatch(sent, { method: "GET" })).toBeNull();
    expect(requestMismatch(sent, { host: "API.example.com" })).toBeNull();
  });

  test("the Host a prover sends: the URL's host, with a port other than 443", () => {
    expect(hostOf(new URL("https://API.example.com/x"))).toBe("api.example.com");
    expect(hostOf(new URL("https://api.example.com:443/x"))).toBe("api.example.com");
    expect(hostOf(new URL("https://api.example.com:8443/x"))).toBe("api.example.com:8443");
    // A fully qualified name: the prover sends its name as TLS gives it, without the trailing dot.
    expect(hostOf(new URL("https://API.example.com./x"))).toBe("api.example.com");
    expect(hostOf(new URL("https://api.example.com.:8443/x"))).toBe("api.example.com:8443");
    // An IPv6 address without its URL brackets, as the prover names it.
    expect(hostOf(new URL("https://[2001:db8::1]/x"))).toBe("2001:db8::1");
    expect(hostOf(new URL("https://[::1]:8443/x"))).toBe("::1:8443");
  });

  test("a Host with or without a fully qualified name's trailing dot is the same Host; its port is not", () => {
    expect(requestMismatch(sent, { ...asked, host: "api.example.com." })).toBeNull();
    const dottedHost = directionHiding(REQUEST.replace("Host: api.example.com", "Host: api.example.com."), []);
    expect(requestMismatch(dottedHost, asked)).toBeNull();
    expect(requestMismatch(sent, { ...asked, host: "api.example.com.:443" })).toBe("the proof's request does not show the one Host api.example.com.:443 expected");
    expect(requestMismatch(sent, { ...asked, host: "api.example.com.." })).toBe("the proof's request does not show the one Host api.example.com.. expected");
    const withPort = (host: string) => directionHiding(REQUEST.replace("Host: api.example.com", `Host: ${host}`), []);
    expect(requestMismatch(withPort("api.example.com.:8443"), { host: "api.example.com:8443" })).toBeNull();
    // Only a port at the end is set aside before the names are compared.
    expect(requestMismatch(withPort("api.exam:1ple.com"), { host: "api.exam:1ple.com." })).toBeNull();
  });
});

describe("verifyProof's method and url", () => {
  const key = generateKey("secp256k1");
  const proofText = JSON.stringify(signProof(sampleBody(key), key));
  const mismatch = (expected: Parameters<typeof verifyProof>[2], text = proofText) => {
    try {
      verifyProof(text, key.publicKeyPem, expected);
      return null;
    } catch (error) {
      return { code: (error as { code: string }).code, message: (error as Error).message };
    }
  };

  test("the method and URL the request shows are accepted; each other one is proof_mismatch", () => {
    expect(mismatch({ method: "GET", url: "https://api.example.com/v1/balance" })).toBeNull();
    expect(mismatch({ method: "POST" })).toEqual({ code: "proof_mismatch", message: 'the proof\'s request method is "GET", not the expected POST' });
    expect(mismatch({ url: "https://api.example.com/v1/other" })).toMatchObject({ code: "proof_mismatch", message: expect.stringContaining("request target") });
    expect(mismatch({ url: "https://api.example.com/v1/balance?x=1" })).toMatchObject({ code: "proof_mismatch" });
    expect(mismatch({ url: "https://other.example.com/v1/balance" })).toEqual({
      code: "proof_mismatch",
      message: "the proof is of server api.example.com, not the expected URL's other.example.com",
    });
    // A fully qualified URL names the same server, Host and port.
    expect(mismatch({ method: "GET", url: "https://api.example.com./v1/balance" })).toBeNull();
    expect(mismatch({ url: "https://API.example.com.:443/v1/balance" })).toBeNull();
    // The URL's port is in the Host a prover sends, so a proof of port 443 shows another Host.
    expect(mismatch({ url: "https://api.example.com:8443/v1/balance" })).toEqual({
      code: "proof_mismatch",
      message: "the proof's request does not show the one Host api.example.com:8443 expected",
    });
  });

  test("a proof of a hidden request, accepted on purpose, is checked for its server and port only", () => {
    const hidden = JSON.stringify(signProof(hiddenRequestBody(key), key));
    expect(mismatch({ allowHiddenRequest: true, method: "POST", url: "https://api.example.com/anything" }, hidden)).toBeNull();
    expect(mismatch({ allowHiddenRequest: true, url: "https://api.example.com:8443/" }, hidden)).toEqual({
      code: "proof_mismatch",
      message: "the proof is of port 443, not the expected URL's 8443",
    });
  });

  test("an expected URL that is not an https URL is the caller's mistake, before the proof is read", () => {
    expect(mismatch({ url: "http://api.example.com/" }, "not even JSON")).toMatchObject({ code: "config_invalid" });
    expect(mismatch({ url: "nonsense" })).toMatchObject({ code: "config_invalid" });
  });

  test("the config error quotes the URL given, cut at 200 characters", () => {
    expect(mismatch({ url: "http://api.example.com/" })).toEqual({ code: "config_invalid", message: 'the expected URL "http://api.example.com/" is not an https URL' });
    const long = `http://api.example.com/${"a".repeat(300)}`;
    expect(mismatch({ url: long })?.message).toBe(`the expected URL ${JSON.stringify(long.slice(0, 200))} is not an https URL`);
  });
});

describe("prove() and a hidden request", () => {
  test('reveal "none" without allowHiddenRequest: config_invalid before anything is sent, saying why and what to pass', async () => {
    const error = await prove({ prover: "http://127.0.0.1:9", url: "https://example.com/", notaryKeys: [], trustProverNotaryKeys: true, mode: "proxy", reveal: "none" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TlsproofError);
    expect((error as TlsproofError).code).toBe("config_invalid");
    expect((error as TlsproofError).message).toBe(`reveal "none" makes a proof whose ${HIDDEN_REQUEST_LIMIT}; pass allowHiddenRequest: true to accept such a proof`);
  });
});
