/**
 * The client's check that the request its proof reveals is the one it sent (method, target where revealed, Host),
 * and prove()'s refusal to ask for a proxy-mode proof whose request would be hidden unless told to accept one.
 */
import { describe, expect, test } from "bun:test";
import { TlsproofError, prove } from "../../src/client/index.ts";
import { hostOf, requestMismatch } from "../../src/client/request-check.ts";
import { HIDDEN_REQUEST_LIMIT } from "../../src/proof/verify.ts";
import { directionHiding, REQUEST, SECRET_API_KEY, spanOf } from "../proof/fixtures.ts";

const sent = directionHiding(REQUEST, [spanOf(REQUEST, SECRET_API_KEY)]);
const asked = { method: "GET", pathAndQuery: "/v1/balance", host: "api.example.com" };

describe("requestMismatch", () => {
  test("the request sent matches the proof; a hidden path segment is skipped", () => {
    expect(requestMismatch(sent, asked)).toBeNull();
    const hiddenSegment = directionHiding(REQUEST, [spanOf(REQUEST, "balance"), spanOf(REQUEST, SECRET_API_KEY)]);
    expect(requestMismatch(hiddenSegment, asked)).toBeNull();
  });

  test("another method, target, target length or Host is named", () => {
    expect(requestMismatch(sent, { ...asked, method: "POST" })).toBe('the proof\'s request method is "GET", this call sent POST');
    expect(requestMismatch(sent, { ...asked, pathAndQuery: "/v1/balanze" })).toBe('the proof\'s request target differs from "/v1/balanze" at byte 9');
    expect(requestMismatch(sent, { ...asked, pathAndQuery: "/v1/balance?x=1" })).toBe('the proof\'s request target is not the 15-byte "/v1/balance?x=1" this call sent');
    expect(requestMismatch(sent, { ...asked, host: "api.example.com:8443" })).toBe("the proof's request does not show the one Host api.example.com:8443 this call sent");
    const hiddenHost = directionHiding(REQUEST, [spanOf(REQUEST, "api.example.com")]);
    expect(requestMismatch(hiddenHost, asked)).toBe("the proof's request does not show the one Host api.example.com this call sent");
  });

  test("the Host a prover sends: the URL's host, with a port other than 443", () => {
    expect(hostOf(new URL("https://API.example.com/x"))).toBe("api.example.com");
    expect(hostOf(new URL("https://api.example.com:443/x"))).toBe("api.example.com");
    expect(hostOf(new URL("https://api.example.com:8443/x"))).toBe("api.example.com:8443");
  });
});

describe("prove() and a hidden request", () => {
  test("mode proxy without revealRequest or allowHiddenRequest: config_invalid before anything is sent, saying why and what to pass", async () => {
    const error = await prove({ prover: "http://127.0.0.1:9", url: "https://example.com/", notaryKeys: [], trustProverNotaryKeys: true, mode: "proxy" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TlsproofError);
    expect((error as TlsproofError).code).toBe("config_invalid");
    expect((error as TlsproofError).message).toBe(
      `mode proxy without revealRequest makes a proof whose ${HIDDEN_REQUEST_LIMIT}; pass allowHiddenRequest: true to accept such a proof, or revealRequest: true to prove the request`,
    );
  });
});
