import { describe, expect, test } from "bun:test";
import type { DescribedRoute, RouteAccess } from "../../src/http/route.ts";
import { notaryAdmission } from "../../src/notary/admission.ts";

/**
 * The refusals a notary makes before any body is read, over every mode's session paths alike, judged on the
 * route the router matched (its declared path and access; undefined where no route answers).
 */
const SESSION_PATHS = ["/session", "/proxy-session", "/modes/tee/session"];
const KEY = "the-embedded-key";

const request = (method: string, path: string, headers: Record<string, string> = {}) =>
  new Request(`http://notary.test${path}`, { method, headers: method === "POST" ? { "content-length": "2", ...headers } : headers });

describe("the notary's admission", () => {
  let stopping = false;
  const refusal = notaryAdmission({ auth: { embeddedKey: KEY }, sessionPaths: SESSION_PATHS, bodyLimit: 1024, stopping: () => stopping });
  const route = (path: string, access: RouteAccess = "key"): DescribedRoute => ({ method: "GET", path, access });
  const codeOf = (method: string, path: string, headers?: Record<string, string>, access?: RouteAccess) => refusal(request(method, path, headers), route(path, access))?.code;
  const keyed = { authorization: `Bearer ${KEY}` };

  test("every route not declared open needs the key, and so does a path no route answers", () => {
    for (const base of SESSION_PATHS) {
      for (const [method, path] of [["POST", base], ["DELETE", `${base}/:id`], ["POST", `${base}/:id/attestation`]] as const) {
        expect({ path, code: codeOf(method, path) }).toEqual({ path, code: "unauthorized" });
        expect({ path, code: codeOf(method, path, keyed) }).toEqual({ path, code: undefined });
      }
    }
    expect(codeOf("GET", "/metrics")).toBe("unauthorized");
    expect(codeOf("GET", "/info", {}, "open")).toBeUndefined();
    expect(refusal(request("GET", "/sessions"), undefined)?.code).toBe("unauthorized");
    expect(refusal(request("GET", "/sessions", keyed), undefined)).toBeUndefined();
  });

  test("a stopping notary opens no session in any mode, and still takes attestations", () => {
    stopping = true;
    try {
      for (const base of SESSION_PATHS) {
        expect({ base, code: codeOf("POST", base, keyed) }).toEqual({ base, code: "shutting_down" });
        expect(codeOf("POST", `${base}/:id/attestation`, keyed)).toBeUndefined();
      }
    } finally {
      stopping = false;
    }
  });

  test("a body is bounded by its declared length before it is read", () => {
    expect(codeOf("POST", "/session", { ...keyed, "content-length": "1025" })).toBe("payload_too_large");
    expect(refusal(new Request("http://notary.test/session", { method: "POST", headers: keyed }), route("/session"))?.code).toBe("invalid_header");
  });
});
