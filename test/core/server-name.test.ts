import { expect, test } from "bun:test";
import * as v from "valibot";
import { tlsServerNameSchema } from "../../src/core/schema.ts";
import { sameServerName, serverNameKey, tlsServerName } from "../../src/core/server-name.ts";

/** A host's one name in TLS and proofs: a fully qualified name's trailing dot dropped (RFC 6066 §3), names compared case-blind. */

test("the name TLS gives a host: one trailing dot dropped; a name with an empty label is none", () => {
  expect(tlsServerName("api.example.com.")).toBe("api.example.com");
  expect(tlsServerName("api.example.com")).toBe("api.example.com");
  expect(tlsServerName("API.Example.com.")).toBe("API.Example.com");
  expect(tlsServerName("localhost.")).toBe("localhost");
  for (const address of ["127.0.0.1", "::1", "::ffff:7f00:1"]) expect(tlsServerName(address)).toBe(address);
  for (const bad of ["api.example.com..", "a..b", ".a", ".", "", ".."]) expect([bad, tlsServerName(bad)]).toEqual([bad, null]);
});

test("two names name the same host case-blind and with or without the trailing dot, and only then", () => {
  expect(sameServerName("api.example.com.", "API.example.com")).toBe(true);
  expect(sameServerName("api.example.com", "api.example.com.")).toBe(true);
  expect(sameServerName("api.example.com.", "api.example.com.")).toBe(true);
  expect(sameServerName("api.example.com", "api.example.co")).toBe(false);
  expect(sameServerName("api.example.com..", "api.example.com")).toBe(false);
  expect(sameServerName("example.com", "xexample.com.")).toBe(false);
  expect(serverNameKey("API.Example.COM.")).toBe("api.example.com");
});

test("as a schema: the name without its dot, or the message for one with an empty label", () => {
  const schema = tlsServerNameSchema("not a host name");
  expect(v.parse(schema, "api.example.com.")).toBe("api.example.com");
  const refused = v.safeParse(schema, "a..b");
  expect(refused.success ? "accepted" : refused.issues[0].message).toBe("not a host name");
});
