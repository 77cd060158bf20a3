import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import type { Proof, ProofBody } from "../../src/proof/format.ts";
import { curveOf } from "../../src/proof/curves.ts";
import { decodePublicKeyPem, generateKey, publicKeyFingerprint } from "../../src/proof/keys.ts";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { canonicalEncoding } from "../../src/proof/canonical.ts";
import { signProof, signatureMatches } from "../../src/proof/sign.ts";
import { HIDDEN_BYTE_MARKER, HIDDEN_REQUEST_LIMIT, type ProofExpectations, TEST_TRUST_ANCHOR_WARNING, UNCHECKED_ANSWER_WARNING, verifyProof } from "../../src/proof/verify.ts";
import { withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import {
  directionHiding,
  hiddenRequestBody,
  legacySampleBody,
  REQUEST,
  RESPONSE,
  SECRET_API_KEY,
  SECRET_TOKEN,
  sampleBody,
  signedSample,
  spanOf,
} from "./fixtures.ts";

const { key, proof } = signedSample();
const clone = <T>(value: T): T => structuredClone(value);

function rejection(input: unknown, pinned = key.publicKeyPem): string {
  try {
    verifyProof(input, pinned);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("proof_invalid");
    return (error as AppError).message;
  }
  throw new Error("expected the proof to be rejected");
}

/** A body changed by `edit` and properly signed: only the consistency checks can catch it. */
function signedWith(edit: (body: ProofBody) => void): Proof {
  const body = sampleBody(key);
  edit(body);
  return signProof(body, key);
}

const SIGNATURE_MISMATCH = "invalid proof: signature does not match: the proof was altered or not signed by this key";
/** The warning of a proof whose request does not show it asked the sample's server, for `problem`. */
const warning = (problem: string) => [`WARNING: the request does not show that it asked api.example.com: ${problem}`];
const METHOD_HIDDEN = "the request line's method and the start of its target must be revealed (an origin-form target, /…)";
const VERSION_HIDDEN = "the request line's HTTP version must be revealed";

describe("a valid proof", () => {
  test.each(["secp256k1", "secp256r1"] as const)("verifies (%s), from an object or JSON text", (algorithm) => {
    const sample = signedSample(algorithm);
    const verified = verifyProof(JSON.stringify(sample.proof), sample.key.publicKeyPem);
    expect(verified.body).toEqual(sample.proof.body);
    expect(verified.notaryKey.algorithm).toBe(algorithm);
    expect(verified.notaryFingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(verifyProof(sample.proof, decodePublicKeyPem(sample.key.publicKeyPem)).body.requestId).toBe(sample.proof.body.requestId);
  });

  test("views: hidden bytes are markers, one per byte, and the secrets are absent", () => {
    const verified = verifyProof(proof, key.publicKeyPem);
    expect(verified.sent.text).toBe(REQUEST.replace(SECRET_API_KEY, HIDDEN_BYTE_MARKER.repeat(SECRET_API_KEY.length)));
    expect(verified.recv.text).toBe(RESPONSE.replace(SECRET_TOKEN, HIDDEN_BYTE_MARKER.repeat(SECRET_TOKEN.length)));
    expect(verified.sent.text).not.toContain(SECRET_API_KEY);
    expect(verified.recv.text).not.toContain(SECRET_TOKEN);
    expect(verified.sent.revealedBytes).toBe(REQUEST.length - SECRET_API_KEY.length);
    expect(verified.recv.length).toBe(RESPONSE.length);
  });

  test("views: a character cut by a hidden range, invalid UTF-8 and a revealed marker are all unambiguous", () => {
    const text = "héllo █ wörld";
    const body = sampleBody(key);
    const bytes = Buffer.from(text);
    // Hide the second byte of "é" (bytes 1..3 are C3 A9) and the "ö" (two bytes) entirely.
    const oStart = bytes.indexOf(Buffer.from("ö"));
    body.transcript.sent = directionHiding(text, [{ start: 2, end: 3 }, { start: oStart, end: oStart + 2 }]);
    const invalid = Buffer.from([0x61, 0xff, 0x62, 0xe2, 0x82]);
    body.transcript.recv = { length: 5, revealed: [{ start: 0, end: 5, data: invalid.toString("base64") }] };
    body.redactions = [];
    const verified = verifyProof(signProof(body, key), key.publicKeyPem);
    expect(verified.sent.text).toBe("h\\xc3█llo \\u2588 w██rld");
    expect(verified.recv.text).toBe("a\\xffb\\xe2\\x82");
  });

  test("one redaction may list spans of both directions: its sent spans first, wherever its recv spans begin", () => {
    const apiKey = spanOf(REQUEST, SECRET_API_KEY);
    const balance = spanOf(RESPONSE, "1234");
    expect(balance.start).toBeLessThan(apiKey.end);
    const both = signedWith((body) => {
      body.transcript.recv = directionHiding(RESPONSE, [balance, spanOf(RESPONSE, SECRET_TOKEN)]);
      body.redactions = [{ pattern: "search:*", spans: [{ direction: "sent", ...apiKey }, { direction: "recv", ...balance }], matched: true }];
    });
    expect(verifyProof(both, key.publicKeyPem).body.redactions).toEqual(both.body.redactions);
  });

  /** The text a verifier shows of a response whose bytes are all revealed. */
  function shownText(bytes: number[]): string {
    const body = sampleBody(key);
    body.transcript.recv = { length: bytes.length, revealed: [{ start: 0, end: bytes.length, data: Buffer.from(bytes).toString("base64") }] };
    body.redactions = [];
    return verifyProof(signProof(body, key), key.publicKeyPem).recv.text;
  }

  // RFC 3629's table at each of its edges: the first and last lead of each row, the second byte's narrower range after
  // E0, ED, F0 and F4, the continuation range of the later bytes; a sequence cut by the end of the bytes is not one.
  test.each<[string, number[], string]>([
    ["the last one-byte character", [0x7f], "\x7f"],
    ["a lone continuation byte", [0x80], "\\x80"],
    ["continuation bytes with no lead", [0x80, 0x80, 0x80, 0x80], "\\x80\\x80\\x80\\x80"],
    ["an overlong two-byte form", [0xc1, 0xbf], "\\xc1\\xbf"],
    ["the first two-byte character", [0xc2, 0x80], "\u0080"],
    ["the last two-byte character", [0xdf, 0xbf], "\u07ff"],
    ["a second byte below the continuation range", [0xc2, 0x7f], "\\xc2\x7f"],
    ["a second byte above the continuation range", [0xc2, 0xc0], "\\xc2\\xc0"],
    ["an overlong three-byte form", [0xe0, 0x9f, 0xbf], "\\xe0\\x9f\\xbf"],
    ["the first three-byte character", [0xe0, 0xa0, 0x80], "\u0800"],
    ["the first lead of the plain three-byte row", [0xe1, 0x80, 0x80], "\u1000"],
    ["the last character before ED", [0xec, 0xbf, 0xbf], "\ucfff"],
    ["the last character before the surrogates", [0xed, 0x9f, 0xbf], "\ud7ff"],
    ["a surrogate", [0xed, 0xa0, 0x80], "\\xed\\xa0\\x80"],
    ["the first character after the surrogates", [0xee, 0x80, 0x80], "\ue000"],
    ["the last three-byte character", [0xef, 0xbf, 0xbf], "\uffff"],
    ["a third byte below the continuation range", [0xe1, 0x80, 0x7f], "\\xe1\\x80\x7f"],
    ["a third byte above the continuation range", [0xe1, 0x80, 0xc0], "\\xe1\\x80\\xc0"],
    ["an overlong four-byte form", [0xf0, 0x8f, 0xbf, 0xbf], "\\xf0\\x8f\\xbf\\xbf"],
    ["the first four-byte character", [0xf0, 0x90, 0x80, 0x80], "\u{10000}"],
    ["the first lead of the plain four-byte row", [0xf1, 0x80, 0x80, 0x80], "\u{40000}"],
    ["the last lead of the plain four-byte row", [0xf3, 0xbf, 0xbf, 0xbf], "\u{fffff}"],
    ["a fourth byte above the continuation range", [0xf1, 0x80, 0x80, 0xc0], "\\xf1\\x80\\x80\\xc0"],
    ["the last character", [0xf4, 0x8f, 0xbf, 0xbf], "\u{10ffff}"],
    ["beyond the last character", [0xf4, 0x90, 0x80, 0x80], "\\xf4\\x90\\x80\\x80"],
    ["a lead byte no character starts with", [0xf5, 0x80, 0x80, 0x80], "\\xf5\\x80\\x80\\x80"],
    ["a sequence ending exactly at the end", [0x41, 0xe2, 0x82, 0xac], "A€"],
    ["a sequence cut by the end", [0x41, 0xe2, 0x82], "A\\xe2\\x82"],
  ])("views: UTF-8 read by RFC 3629, %s", (_, bytes, text) => {
    expect(shownText(bytes)).toBe(text);
  });
});

describe("tampering is rejected", () => {
  const tampered: [string, (proof: Proof) => void][] = [
    ["revealed data byte", (p) => {
      const data = Buffer.from(p.body.transcript.recv.revealed[1]!.data, "base64");
      data[0] = (data[0] as number) ^ 1;
      p.body.transcript.recv.revealed[1]!.data = data.toString("base64");
    }],
    ["server name", (p) => void (p.body.serverName = "api.example.org")],
    ["request id", (p) => void (p.body.requestId = p.body.requestId.replace(/.$/, "2"))],
    ["connection time", (p) => void (p.body.connectionTime += 1)],
    ["notarization time", (p) => void (p.body.notarizedAt -= 1)],
    ["TLS version", (p) => void (p.body.tlsVersion = "TLS1.3")],
    ["test trust anchor flag", (p) => void (p.body.testTrustAnchor = true)],
    ["notary version", (p) => void (p.body.notaryVersion = "0.1.1")],
    ["redaction pattern", (p) => void (p.body.redactions[0]!.pattern = "header:cookie")],
    ["dropped redaction", (p) => void p.body.redactions.pop()],
    ["a range moved with its data", (p) => {
      // Revealing one byte less at the end of the first recv range keeps the proof consistent.
      const range = p.body.transcript.recv.revealed[0]!;
      range.end -= 1;
      range.data = Buffer.from(range.data, "base64").subarray(0, -1).toString("base64");
    }],
    ["signature byte", (p) => void (p.signature = (p.signature[0] === "0" ? "1" : "0") + p.signature.slice(1))],
  ];

  test.each(tampered)("%s → signature mismatch", (_, edit) => {
    const copy = clone(proof);
    edit(copy);
    expect(rejection(copy)).toBe(SIGNATURE_MISMATCH);
  });

  test("every single-character change of the proof file is rejected", () => {
    const text = JSON.stringify(proof);
    const bodyStart = text.indexOf('"body"');
    let checked = 0;
    for (let i = bodyStart; i < text.length; i++) {
      const char = text.charCodeAt(i);
      const changed = text.slice(0, i) + String.fromCharCode(char === 0x7e ? 0x7d : char ^ 1) + text.slice(i + 1);
      rejection(changed);
      checked++;
    }
    expect(checked).toBeGreaterThan(1000);
  });

  test("a high-s twin of the signature is rejected (one valid encoding per signature)", () => {
    const curve = curveOf("secp256k1");
    const signature = curve.Signature.fromHex(proof.signature, "compact");
    const highS = new curve.Signature(signature.r, curve.Point.CURVE().n - signature.s);
    expect(rejection({ ...proof, signature: highS.toHex("compact") })).toBe(SIGNATURE_MISMATCH);
  });

  test("a proof by another notary key is rejected as foreign", () => {
    const other = signedSample();
    expect(rejection(other.proof)).toMatch(/^invalid proof: signed by a different notary key \(sha256:[0-9a-f]{64}, expected sha256:[0-9a-f]{64}\)$/);
  });

  test("a body signed as another version is a signature mismatch: the version is part of the signed bytes", () => {
    const body = sampleBody(key);
    const asVersion2 = bytesToHex(
      curveOf(key.algorithm).sign(sha256(canonicalEncoding("tlsproof/2", body)), key.privateKey, { prehash: false, lowS: true, format: "compact" }),
    );
    const publicKey = decodePublicKeyPem(key.publicKeyPem);
    expect(signatureMatches("tlsproof/2", body, asVersion2, publicKey)).toBe(true);
    expect(signatureMatches("tlsproof/1", body, asVersion2, publicKey)).toBe(false);
    expect(rejection({ version: "tlsproof/1", body, signature: asVersion2 })).toBe(SIGNATURE_MISMATCH);
    // The same body signed as the version its proof names verifies.
    expect(verifyProof(signProof(body, key), key.publicKeyPem).body).toEqual(body);
  });

  test("a deployment pinning several keys accepts a proof by any of them and names them all when none signed it", () => {
    const [first, second] = [generateKey("secp256k1"), generateKey("secp256r1")].map((other) => decodePublicKeyPem(other.publicKeyPem));
    const pinned = decodePublicKeyPem(key.publicKeyPem);
    expect(verifyProof(proof, [first!, pinned, second!]).notaryFingerprint).toBe(publicKeyFingerprint(pinned));
    expect(() => verifyProof(proof, [first!, second!])).toThrow(
      `invalid proof: signed by a different notary key (${publicKeyFingerprint(pinned)}, expected ${publicKeyFingerprint(first!)} or ${publicKeyFingerprint(second!)})`,
    );
  });

  test("a proof naming the pinned key but signed by another key is a signature mismatch", () => {
    const forger = generateKey("secp256k1");
    const forged = clone(proof);
    forged.signature = signProof({ ...sampleBody(forger), serverName: "evil.example" }, forger).signature;
    forged.body.serverName = "evil.example";
    expect(rejection(forged)).toBe(SIGNATURE_MISMATCH);
  });
});

describe("malformed proofs are rejected with the field at fault", () => {
  test.each([
    ["truncated JSON", JSON.stringify(proof).slice(0, 200), /^invalid proof: not JSON \(/],
    ["a JSON array", "[]", /^invalid proof: not a JSON object$/],
    ["null", null, /^invalid proof: not a JSON object$/],
    ["a number", 42, /^invalid proof: not a JSON object$/],
    ["missing version", { body: proof.body, signature: proof.signature }, /^invalid proof: missing key "version"$/],
    ["another version", { ...proof, version: "tlsproof/2" }, /^invalid proof: unsupported version "tlsproof\/2" \(expected "tlsproof\/1"\)$/],
    ["unknown top-level key", { ...proof, extra: 1 }, /^invalid proof: unknown key "extra"$/],
    ["unknown nested key", { ...proof, body: { ...proof.body, transcript: { ...proof.body.transcript, sent: { ...proof.body.transcript.sent, note: "x" } } } }, /unknown key "body\.transcript\.sent\.note"$/],
    ["an array for the body", { ...proof, body: [] }, /^invalid proof: body: expected an object, got an array$/],
    ["missing notary object", { ...proof, body: { ...proof.body, notary: undefined } }, /^invalid proof: missing key "body\.notary"$/],
    ["missing body key", { ...proof, body: { ...proof.body, serverName: undefined } }, /missing key "body\.serverName"$/],
    ["negative start", (() => { const p = clone(proof); p.body.transcript.sent.revealed[0]!.start = -1; return p; })(), /body\.transcript\.sent\.revealed\[0\]\.start: expected a non-negative integer, got -1$/],
    ["fractional time", { ...proof, body: { ...proof.body, connectionTime: 1.5 } }, /body\.connectionTime: expected a non-negative integer, got 1\.5$/],
    ["string length", (() => { const p = clone(proof); (p.body.transcript.recv as { length: unknown }).length = "132"; return p; })(), /body\.transcript\.recv\.length: expected a non-negative integer, got "132"$/],
    ["unknown TLS version", { ...proof, body: { ...proof.body, tlsVersion: "SSL3" } }, /body\.tlsVersion: expected one of "TLS1\.2", "TLS1\.3", got "SSL3"$/],
    ["uppercase hex signature", { ...proof, signature: proof.signature.toUpperCase() }, /signature: expected 128 lowercase hex digits/],
    ["short signature", { ...proof, signature: proof.signature.slice(2) }, /signature: expected 128 lowercase hex digits/],
  ])("%s", (_, input, reason) => {
    expect(rejection(input)).toMatch(reason);
  });

  test.each<[string, (body: ProofBody) => void, RegExp]>([
    ["overlapping ranges", (b) => {
      b.transcript.sent = { length: 6, revealed: [{ start: 0, end: 3, data: "YWJj" }, { start: 2, end: 5, data: "Y2Rl" }] };
      b.redactions = [];
    }, /body\.transcript\.sent\.revealed\[1\]: ranges not sorted or overlapping \(starts at 2, previous ends at 3\)/],
    ["unsorted ranges", (b) => void b.transcript.recv.revealed.reverse(), /body\.transcript\.recv\.revealed\[1\]: ranges not sorted or overlapping/],
    ["adjacent ranges", (b) => {
      b.transcript.sent = { length: 4, revealed: [{ start: 0, end: 2, data: "YWI=" }, { start: 2, end: 4, data: "Y2Q=" }] };
      b.redactions = [];
    }, /body\.transcript\.sent\.revealed\[1\]: adjacent to the previous range/],
    ["empty range", (b) => {
      b.transcript.sent = { length: 4, revealed: [{ start: 1, end: 1, data: "" }] };
      b.redactions = [];
    }, /body\.transcript\.sent\.revealed\[0\]: empty or reversed range 1\.\.1/],
    ["range beyond the length", (b) => void (b.transcript.recv.length = 120), /body\.transcript\.recv\.revealed\[1\]: range 130\.\.132 exceeds the recv length 120/],
    ["data shorter than its range", (b) => {
      const range = b.transcript.sent.revealed[0]!;
      range.data = Buffer.from(range.data, "base64").subarray(1).toString("base64");
    }, /body\.transcript\.sent\.revealed\[0\]\.data: holds 70 bytes, but the range 0\.\.71 spans 71/],
    ["data shorter than a range further on", (b) => {
      const range = b.transcript.recv.revealed[1]!;
      range.data = Buffer.from(range.data, "base64").subarray(1).toString("base64");
    }, /body\.transcript\.recv\.revealed\[1\]\.data: holds 1 bytes, but the range 130\.\.132 spans 2$/],
    ["bad base64", (b) => void (b.transcript.sent.revealed[0]!.data = "@@@@"), /body\.transcript\.sent\.revealed\[0\]\.data: not valid base64/],
    ["non-canonical base64", (b) => {
      b.transcript.sent = { length: 1, revealed: [{ start: 0, end: 1, data: "YR==" }] };
      b.redactions = [];
    }, /body\.transcript\.sent\.revealed\[0\]\.data: not valid base64/],
    ["declared hidden span that is revealed", (b) => {
      b.redactions[0]!.spans[0]!.start -= 5;
    }, /body\.redactions\[0\]\.spans\[0\]: declared hidden, but sent bytes 66\.\.71 are revealed/],
    ["span beyond the length", (b) => void (b.redactions[1]!.spans[0]!.end = 500), /body\.redactions\[1\]\.spans\[0\]: span 113\.\.500 exceeds the recv length 132/],
    ["matched without spans", (b) => void (b.redactions[2]!.matched = true), /body\.redactions\[2\]: "matched" is true but it has 0 spans/],
  ])("%s, even when signed", (_, edit, reason) => {
    expect(rejection(signedWith(edit))).toMatch(reason);
  });

  test("a notary algorithm that is not the key's is named", () => {
    const bad = clone(proof);
    bad.body.notary.algorithm = "secp256r1";
    expect(rejection(bad)).toBe("invalid proof: body.notary.algorithm is secp256r1 but the key is secp256k1");
  });

  test("a garbage public key inside the proof is named", () => {
    const bad = clone(proof);
    bad.body.notary.publicKey = "not a key";
    expect(rejection(bad)).toMatch(/^invalid proof: body\.notary\.publicKey: not a PEM public key/);
  });

  test("a garbage pinned key is the caller's config error, not a proof error", () => {
    expect(() => verifyProof(proof, "nonsense")).toThrow(expect.objectContaining({ code: "config_invalid" }));
  });
});

describe("duplicate keys", () => {
  test("anywhere in the file, compared decoded, are rejected with their place", () => {
    const text = JSON.stringify(proof);
    expect(rejection(text.replace('"serverName":', '"serverName":"x","serverName":'))).toBe('invalid proof: duplicate key "serverName" at body');
    expect(rejection(text.replace('"version":', '"version":1,"\\u0076ersion":'))).toBe('invalid proof: duplicate key "version" at the top level');
    expect(rejection(text.replace('"matched":true', '"matched":true,"matched":true'))).toBe('invalid proof: duplicate key "matched" at body.redactions[0]');
    expect(rejection(text.replace(/("revealed":\[\{)/, '$1"start":0,'))).toBe('invalid proof: duplicate key "start" at body.transcript.sent.revealed[0]');
  });

  test("equal keys in different objects, and keys inside strings, are not duplicates", () => {
    const body = sampleBody(key);
    body.requestId = 'a {"k":1,"k":2} b';
    expect(verifyProof(JSON.stringify(signProof(body, key)), key.publicKeyPem).body.requestId).toBe(body.requestId);
  });
});

describe("numbers", () => {
  test("a number not in its canonical form is rejected with its place, though it parses to the signed value", () => {
    const text = JSON.stringify(proof);
    const at = (from: string, to: string) => rejection(text.replace(from, to));
    expect(at('"connectionTime":1717171717', '"connectionTime":1717171.717e3')).toBe("invalid proof: non-canonical number 1717171.717e3 at body.connectionTime");
    expect(at('"notarizedAt":1717171720123', '"notarizedAt":1717171720123.00000000001')).toBe(
      "invalid proof: non-canonical number 1717171720123.00000000001 at body.notarizedAt",
    );
    expect(at('"start":0', '"start":-0')).toBe("invalid proof: non-canonical number -0 at body.transcript.sent.revealed[0].start");
    expect(at('"start":0', '"start":0.0')).toBe("invalid proof: non-canonical number 0.0 at body.transcript.sent.revealed[0].start");
    // Canonical text verifies, and digits inside strings are not numbers.
    expect(verifyProof(text, key.publicKeyPem).body.connectionTime).toBe(1717171717);
  });
});

describe("expectations: the proof of the request and server the caller asked for", () => {
  const { requestId, serverName } = proof.body;
  const mismatch = (expected: { requestId?: string; serverName?: string }): AppError => {
    try {
      verifyProof(proof, key.publicKeyPem, expected);
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      return error as AppError;
    }
    throw new Error("expected a mismatch");
  };

  test("met, compared case-blind", () => {
    expect(verifyProof(proof, key.publicKeyPem, { requestId: requestId.toUpperCase(), serverName: "API.Example.com" }).body.requestId).toBe(requestId);
  });

  test("a server name with or without a fully qualified name's trailing dot is the same server, on either side", () => {
    expect(verifyProof(proof, key.publicKeyPem, { serverName: `${serverName}.` }).body.serverName).toBe(serverName);
    const dotted = signedWith((body) => (body.serverName = `${serverName}.`));
    expect(verifyProof(dotted, key.publicKeyPem, { serverName }).body.serverName).toBe(`${serverName}.`);
    expect(mismatch({ serverName: `${serverName}..` }).message).toBe(`the proof is of server ${serverName}, expected ${serverName}..`);
  });

  test("another request id or server name is proof_mismatch, with both values", () => {
    const otherId = mismatch({ requestId: "0b6f8a8e-5f0c-4a63-9d7e-1c2b3a4d5e6f", serverName });
    expect(otherId.code).toBe("proof_mismatch");
    expect(otherId.message).toBe(`the proof is of request id ${requestId}, expected 0b6f8a8e-5f0c-4a63-9d7e-1c2b3a4d5e6f`);
    const otherServer = mismatch({ requestId, serverName: "api.example.org" });
    expect(otherServer.code).toBe("proof_mismatch");
    expect(otherServer.message).toBe(`the proof is of server ${serverName}, expected api.example.org`);
  });
});

describe("a request that does not show the server it asked (signed before notaries refused that)", () => {
  const hostSpan = spanOf(REQUEST, "api.example.com\r\n");
  const hidingHost = (body: ProofBody) => {
    const hidden = { start: hostSpan.start, end: hostSpan.end - 2 };
    body.transcript.sent = directionHiding(REQUEST, [hidden, spanOf(REQUEST, SECRET_API_KEY)]);
  };

  test("verifies, with a warning naming the server and the problem; a request showing its Host has none", () => {
    const verified = verifyProof(signedWith(hidingHost), key.publicKeyPem);
    expect(verified.warnings).toEqual(["WARNING: the request does not show that it asked api.example.com: the request's Host header value is hidden"]);
    expect(verifyProof(proof, key.publicKeyPem).warnings).toEqual([]);
  });

  /** The warnings of a signed proof whose request is `request`, revealed but for `hidden`. */
  const warningsOf = (request: string, hidden: { start: number; end: number }[] = []) =>
    verifyProof(signedWith((body) => ((body.transcript.sent = directionHiding(request, hidden)), (body.redactions = []))), key.publicKeyPem).warnings;

  test("the request line must show a method, an origin-form target's start and an HTTP/1.0 or 1.1 version", () => {
    expect(warningsOf(REQUEST)).toEqual([]);
    expect(warningsOf(REQUEST.replace("GET ", " "))).toEqual(warning(METHOD_HIDDEN));
    expect(warningsOf(REQUEST.replace(" HTTP/1.1", ""))).toEqual(warning(METHOD_HIDDEN));
    expect(warningsOf(REQUEST, [{ start: 2, end: 3 }])).toEqual(warning(METHOD_HIDDEN));
    expect(warningsOf(REQUEST.replace("HTTP/1.1", "HTTP/1.0"))).toEqual([]);
    expect(warningsOf(REQUEST.replace("HTTP/1.1", "HTTP/1.2"))).toEqual(warning(VERSION_HIDDEN));
    expect(warningsOf(REQUEST.replace("HTTP/1.1", "HTTP/1.10"))).toEqual(warning(VERSION_HIDDEN));
  });

  test("the path and query may be hidden anywhere, however long the request line", () => {
    const long = REQUEST.replace("/v1/balance", `/v1/balance?q=${"x".repeat(200)}`);
    const query = spanOf(long, "x".repeat(200));
    expect(warningsOf(long, [{ start: query.end - 10, end: query.end - 1 }])).toEqual([]);
    expect(warningsOf(long, [query])).toEqual([]);
  });

  test("only a port at the end of the Host is set aside before it is compared", () => {
    expect(warningsOf(REQUEST.replace("Host: api.example.com", "Host: api.example.com:8443"))).toEqual([]);
    expect(warningsOf(REQUEST.replace("Host: api.example.com", "Host: api.exam:1ple.com"))).toEqual(
      warning('the request\'s Host header names "api.exam:1ple.com", not the verified server api.example.com'),
    );
  });

  test("a Host naming the server with a trailing dot, or a server name with one, names that server", () => {
    expect(warningsOf(REQUEST.replace("Host: api.example.com", "Host: api.example.com."))).toEqual([]);
    expect(warningsOf(REQUEST.replace("Host: api.example.com", "Host: api.example.com.:8443"))).toEqual([]);
    expect(verifyProof(signedWith((body) => (body.serverName = "api.example.com.")), key.publicKeyPem).warnings).toEqual([]);
    expect(warningsOf(REQUEST.replace("Host: api.example.com", "Host: api.example.com.."))).toEqual(
      warning('the request\'s Host header names "api.example.com..", not the verified server api.example.com'),
    );
  });

  test("a Host naming another server is warned about too", () => {
    const otherHost = signedWith((body) => (body.serverName = "api.example.org"));
    expect(verifyProof(otherHost, key.publicKeyPem).warnings).toEqual([
      'WARNING: the request does not show that it asked api.example.org: the request\'s Host header names "api.example.com", not the verified server api.example.org',
    ]);
  });

  test("a proxy-mode proof whose request is hidden whole, accepted on purpose, is warned about as such, not as a bad Host", () => {
    const hiddenWhole = signProof(hiddenRequestBody(key), key);
    expect(verifyProof(hiddenWhole, key.publicKeyPem, { allowHiddenRequest: true }).warnings).toEqual([`WARNING: this proof's ${HIDDEN_REQUEST_LIMIT}`]);
    const proxyHidingHost = signedWith((body) => ((body.mode = "proxy"), (body.serverPort = 443), hidingHost(body)));
    expect(verifyProof(proxyHidingHost, key.publicKeyPem).warnings).toHaveLength(1);
  });
});

describe("expectations: the mode, and a request hidden whole only when the caller accepts one", () => {
  const mismatch = (input: unknown, expected: Parameters<typeof verifyProof>[2]): AppError => {
    try {
      verifyProof(input, key.publicKeyPem, expected);
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      return error as AppError;
    }
    throw new Error("expected a mismatch");
  };
  const hidden = signProof(hiddenRequestBody(key), key);

  test("another mode is proof_mismatch; a proof that states none is an MPC proof", () => {
    expect(verifyProof(proof, key.publicKeyPem, { mode: "mpc" }).body.mode).toBe("mpc");
    expect(mismatch(proof, { mode: "proxy" })).toMatchObject({ code: "proof_mismatch", message: "the proof is of mode mpc, expected proxy" });
    const older = signProof(legacySampleBody(key), key);
    expect(verifyProof(older, key.publicKeyPem, { mode: "mpc" }).body.mode).toBeUndefined();
    expect(mismatch(hidden, { mode: "mpc", allowHiddenRequest: true }).message).toBe("the proof is of mode proxy, expected mpc");
  });

  test("a hidden request is proof_mismatch saying what the proof does not prove; accepted when asked for", () => {
    const refused = mismatch(hidden, {});
    expect(refused.code).toBe("proof_mismatch");
    expect(refused.message).toBe(`the proof's ${HIDDEN_REQUEST_LIMIT}; accept such a proof only on purpose (cli verify --allow-hidden-request, verifyProof's allowHiddenRequest)`);
    expect(refused.message).toContain("method, URL, Host or port");
    expect(verifyProof(hidden, key.publicKeyPem, { allowHiddenRequest: true, mode: "proxy" }).body.request).toBe("hidden");
  });

  test("no other proof is taken for one whose request is hidden: each is verified without the opt-in", () => {
    const older = legacySampleBody(key);
    // An older MPC proof revealing no request byte: an MPC notary never leaves the request unseen, the prover hid it all.
    const olderMpc = signProof({ ...older, transcript: { ...older.transcript, sent: { length: 80, revealed: [] } }, redactions: [] }, key);
    expect(verifyProof(olderMpc, key.publicKeyPem).warnings).toEqual([...warning(METHOD_HIDDEN), UNCHECKED_ANSWER_WARNING]);
    // An older proxy-mode proof revealing its request.
    expect(verifyProof(signProof({ ...older, mode: "proxy" }, key), key.publicKeyPem).warnings).toEqual([UNCHECKED_ANSWER_WARNING]);
    // A checked proxy-mode proof whose notary saw the request, every byte of which the prover then hid.
    const seen = sampleBody(key);
    const allHidden = { ...seen, mode: "proxy", serverPort: 443, transcript: { ...seen.transcript, sent: { length: seen.transcript.sent.length, revealed: [] } } };
    expect(verifyProof(signProof(allHidden, key), key.publicKeyPem).warnings).toEqual(warning(METHOD_HIDDEN));
  });

  test("an older proxy-mode proof revealing no request byte hid it too: the same opt-in", () => {
    const older = legacySampleBody(key);
    const hiddenOlder = signProof({ ...older, mode: "proxy", transcript: { ...older.transcript, sent: { length: 80, revealed: [] } }, redactions: [] }, key);
    expect(mismatch(hiddenOlder, {}).code).toBe("proof_mismatch");
    const verified = verifyProof(hiddenOlder, key.publicKeyPem, { allowHiddenRequest: true });
    expect(verified.warnings).toEqual([`WARNING: this proof's ${HIDDEN_REQUEST_LIMIT}`, UNCHECKED_ANSWER_WARNING]);
  });
});

describe("the fields of a checked answer", () => {
  test("an older proof lacks them all: valid, with a warning that its answer was not checked", () => {
    const verified = verifyProof(signProof(legacySampleBody(key), key), key.publicKeyPem);
    expect(verified.warnings).toEqual([UNCHECKED_ANSWER_WARNING]);
    expect(UNCHECKED_ANSWER_WARNING).toStartWith("WARNING: a proof from before notaries checked answers: the answer may be cut short");
  });

  test("an answer that ended within the second its connection began is fine", () => {
    expect(verifyProof(signedWith((b) => void (b.responseTime = b.connectionTime)), key.publicKeyPem).body.responseTime).toBe(1_717_171_717);
  });

  test.each<[string, (body: ProofBody) => void, string]>([
    ["only some of them", (b) => delete b.responseFraming, "invalid proof: body: responseTime, responseFraming, request come together; this proof has only responseTime, request"],
    ["a port in an MPC proof", (b) => void (b.serverPort = 443), "invalid proof: body.serverPort: a notary in mpc mode never dials the server"],
    ["no port in a proxy proof", (b) => void (b.mode = "proxy"), "invalid proof: body.serverPort: a proof of proxy mode names the port its notary dialled"],
    ["an answer ended before it began", (b) => void (b.responseTime = b.connectionTime - 1), "invalid proof: body.responseTime 1717171716 is before body.connectionTime 1717171717"],
    ["a hidden request in an MPC proof", (b) => {
      b.request = "hidden";
      b.transcript.sent = { length: b.transcript.sent.length, revealed: [] };
      b.redactions = b.redactions.filter((redaction) => redaction.spans.every((span) => span.direction === "recv"));
    }, "invalid proof: body.request: a notary in mpc mode never leaves the request unseen"],
    ["a hidden request with revealed bytes", (b) => ((b.mode = "proxy"), (b.serverPort = 443), (b.request = "hidden")), 'invalid proof: body.request is "hidden" but sent bytes are revealed'],
  ])("%s is refused, even when signed", (_, edit, reason) => {
    expect(rejection(signedWith(edit))).toBe(reason);
  });
});

describe("test trust anchor", () => {
  test("a proof made under one says so in a field and a warning; an ordinary one has neither", () => {
    const test = signedWith((body) => (body.testTrustAnchor = true));
    expect(() => verifyProof(test, key.publicKeyPem)).toThrow(expect.objectContaining({ code: "proof_mismatch", message: expect.stringContaining("TEST trust anchor") }));
    const verified = verifyProof(test, key.publicKeyPem, { allowTestTrustAnchor: true });
    expect(verified.testTrustAnchor).toBe(true);
    expect(verified.warnings).toEqual([TEST_TRUST_ANCHOR_WARNING]);
    const ordinary = verifyProof(proof, key.publicKeyPem);
    expect(ordinary.testTrustAnchor).toBe(false);
    expect(ordinary.warnings).toEqual([]);
  });
});

describe("cost: the signature first, linear checks, a cap on entries", () => {
  /**
   * A body whose recv hides `count` single bytes, each declared by one redaction, and reveals the rest; the
   * request is revealed whole. It lists 2 × count + 2 + `emptyRedactions` + 1 entries (MAX_PROOF_ENTRIES).
   */
  function alternating(count: number, emptyRedactions = 0): ProofBody {
    const body = sampleBody(key);
    const length = 2 * count + 1;
    const a = Buffer.from("a").toString("base64");
    body.transcript.sent = directionHiding(REQUEST, []);
    body.transcript.recv = { length, revealed: Array.from({ length: count + 1 }, (_, i) => ({ start: 2 * i, end: 2 * i + 1, data: a })) };
    const spans = Array.from({ length: count }, (_, i) => ({ direction: "recv" as const, start: 2 * i + 1, end: 2 * i + 2 }));
    body.redactions = [{ pattern: "search:b", spans, matched: true }, ...Array.from({ length: emptyRedactions }, () => ({ pattern: "p", spans: [], matched: false }))];
    return body;
  }

  test("a file nobody signed is refused as unsigned before any rule on its ranges runs", () => {
    const overlapping = clone(proof);
    overlapping.body.transcript.sent.revealed[1]!.start = 0;
    expect(rejection(overlapping)).toBe(SIGNATURE_MISMATCH);
    expect(rejection({ ...signProof(overlapping.body, key), signature: proof.signature })).toBe(SIGNATURE_MISMATCH);
  });

  test("an unsigned proof with 100,000 spans is refused as unsigned", () => {
    const body = alternating(100_000);
    expect(rejection(JSON.stringify({ version: proof.version, body, signature: proof.signature }))).toBe(SIGNATURE_MISMATCH);
  });

  test("a signed proof over the cap is refused naming it; one at the cap verifies", () => {
    const atCap = alternating(32_766, 1);
    expect(verifyProof(signProof(atCap, key), key.publicKeyPem).recv.revealedBytes).toBe(32_767);
    expect(rejection(signProof(alternating(32_766, 2), key))).toBe(
      "invalid proof: body lists 65537 revealed ranges, redactions and spans together; a proof holds at most 65536 (MAX_PROOF_ENTRIES)",
    );
  });

  test("a declared span over one revealed range among thousands is found, wherever it lies", () => {
    // [start, end) of the span, and the revealed bytes it shows: first, middle and last revealed ranges.
    for (const [start, end, shown] of [[0, 1, "0..1"], [2468, 2469, "2468..2469"], [1235, 1238, "1236..1237"], [7999, 8001, "8000..8001"]] as const) {
      const body = alternating(4000);
      body.redactions.push({ pattern: "p", spans: [{ direction: "recv", start, end }], matched: true });
      expect(rejection(signProof(body, key))).toBe(`invalid proof: body.redactions[1].spans[0]: declared hidden, but recv bytes ${shown} are revealed`);
    }
  });
});

describe("what verifyProof requires of claims and recipient", () => {
  const notary = generateKey("secp256k1");
  const pinnedKey = decodePublicKeyPem(notary.publicKeyPem);
  const proofBy = (change: Partial<ProofBody> = {}) => signProof(withEvmAttestation({ ...sampleBody(notary), claims: [{ kind: "value", subject: "res:body:currency", value: '"EUR"' }], ...change }, notary), notary);
  const verifyProofAgainst = (p: unknown, expected: ProofExpectations = {}) => verifyProof(p, pinnedKey, expected);
  const refused = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return error as AppError;
    }
    throw new Error("expected a refusal");
  };
  const recipient = "0x00000000000000000000000000000000000000aa";

  test("the recipient, compared case-blind; none named, or another, is a mismatch", () => {
    const proof = proofBy({ recipient });
    expect(verifyProofAgainst(proof, { recipient: recipient.toUpperCase().replace("0X", "0x") }).recipient).toBe(recipient);
    expect(refused(() => verifyProofAgainst(proof, { recipient: "0x00000000000000000000000000000000000000bb" })).message).toBe(
      `the proof was made for ${recipient}, expected 0x00000000000000000000000000000000000000bb`,
    );
    expect(refused(() => verifyProofAgainst(proofBy(), { recipient })).message).toBe(`the proof names no recipient, expected ${recipient}`);
    expect(verifyProofAgainst(proofBy()).recipient).toBeNull();
  });

  test("a signed claim its own revealed answer contradicts makes the proof invalid; one it bears out verifies", () => {
    // The answer revealed whole: a claim is judged again only on an answer seen whole.
    const sample = sampleBody(notary);
    const wholeAnswer = {
      transcript: { ...sample.transcript, recv: directionHiding(RESPONSE, []) },
      redactions: sample.redactions.filter((redaction) => redaction.spans.every((span) => span.direction === "sent")),
    };
    const borneOut = proofBy({ ...wholeAnswer, claims: [{ kind: "value", subject: "res:body:currency", value: '"EUR"' }] });
    expect(verifyProofAgainst(borneOut).claims).toEqual([{ kind: "value", subject: "res:body:currency", value: '"EUR"' }]);
    const contradicted = proofBy({ ...wholeAnswer, claims: [{ kind: "value", subject: "res:body:currency", value: '"USD"' }] });
    const refusal = refused(() => verifyProofAgainst(contradicted));
    expect(refusal.code).toBe("proof_invalid");
    expect(refusal.message).toBe("invalid proof: body.claims[0] states what the proof's own answer contradicts (res:body:currency)");
    const falsePredicate = proofBy({ ...wholeAnswer, claims: [{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: false }] });
    expect(refused(() => verifyProofAgainst(falsePredicate)).message).toContain("contradicts (res:body:balance)");
  });

  test("a proof made before claims states none: verified with none, and an expected claim is a mismatch", () => {
    const { claims: _claims, ...older } = sampleBody(notary);
    const proof = signProof(withEvmAttestation(older, notary), notary);
    expect(verifyProofAgainst(proof).claims).toEqual([]);
    expect(refused(() => verifyProofAgainst(proof, { claims: ["res:body:currency"] })).message).toBe("the proof states no claim res:body:currency");
  });
});
