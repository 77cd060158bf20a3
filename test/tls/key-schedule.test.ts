import { expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { hkdfExpandLabel, prf12, trafficKeys } from "../../src/tls/key-schedule.ts";
import { cipherSuiteOf } from "../../src/tls/suites.ts";

/** Published vectors: RFC 8448 §3 (simple 1-RTT handshake, TLS_AES_128_GCM_SHA256) and the TLS 1.2 PRF vector. */

const hex = (spaced: string) => hexToBytes(spaced.replaceAll(" ", ""));
const suite = cipherSuiteOf(0x1301, "TLS1.3");

test("TLS 1.3 record keys of RFC 8448's server handshake and application traffic secrets", () => {
  const handshake = trafficKeys(suite, hex("b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38"));
  expect(bytesToHex(handshake.key)).toBe("3fce516009c21727d0f2e4e86ee403bc");
  expect(bytesToHex(handshake.iv)).toBe("5d313eb2671276ee13000b30");
  const application = trafficKeys(suite, hex("a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43"));
  expect(bytesToHex(application.key)).toBe("9f02283b6c9c07efc26bb9f2ac92e356");
  expect(bytesToHex(application.iv)).toBe("cf782b88dd83549aadf1e984");
});

test("TLS 1.3 finished key of RFC 8448's server handshake traffic secret", () => {
  const secret = hex("b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38");
  expect(bytesToHex(hkdfExpandLabel("sha256", secret, "finished", new Uint8Array(0), 32))).toBe(
    "008d3b66f816ea559f96b537e885c31fc068bf492c652f01f288a1d8cdc19fc8",
  );
});

test("TLS 1.2 PRF (SHA-256), the IETF TLS working group's 100-byte vector", () => {
  const out = prf12("sha256", hex("9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35"), "test label", hex("a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c"), 100);
  expect(bytesToHex(out)).toBe(
    "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab" +
      "4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66",
  );
});

test("HKDF-Expand-Label past one hash length: T(1) | T(2) as RFC 5869 §2.3 chains them", () => {
  const secret = hex("b6 7b 7d 69 0c c1 6c 4e 75 e5 42 13 cb 2d 37 b4 e9 c9 12 bc de d9 10 5d 42 be fd 59 d3 91 ad 38");
  const label = new TextEncoder().encode("tls13 long");
  const info = Uint8Array.of(0, 42, label.length, ...label, 0);
  const t1 = createHmac("sha256", secret).update(info).update(Uint8Array.of(1)).digest();
  const t2 = createHmac("sha256", secret).update(t1).update(info).update(Uint8Array.of(2)).digest();
  expect(bytesToHex(hkdfExpandLabel("sha256", secret, "long", new Uint8Array(0), 42))).toBe(Buffer.concat([t1, t2]).subarray(0, 42).toString("hex"));
});
