import { describe, expect, test } from "bun:test";
import { decodePublicKeyPem, publicKeyFingerprint } from "../../src/proof/keys.ts";
import { DECLARED_BY, renderVerifiedProof, TEST_TRUST_ANCHOR_WARNING, verifiedProofJson } from "../../src/proof/render.ts";
import { signProof } from "../../src/proof/sign.ts";
import { verifyProof } from "../../src/proof/verify.ts";
import { HIDDEN_HEADERS_CAN_ADD } from "../../src/proof/request-rule.ts";
import { directionHiding, hiddenRequestBody, REQUEST, SECRET_API_KEY, SECRET_TOKEN, sampleBody, signedSample } from "./fixtures.ts";

const { key, proof } = signedSample();
const verified = verifyProof(proof, key.publicKeyPem);
const fingerprint = publicKeyFingerprint(decodePublicKeyPem(key.publicKeyPem));

describe("human report", () => {
  const report = renderVerifiedProof(verified);

  test("states what was proven and by which key", () => {
    expect(report).toContain(`Proof valid: signed by notary key ${fingerprint} (secp256k1, tlsproof 0.1.0)`);
    expect(report).toContain("Server:       api.example.com");
    expect(report).toContain("Connected at: 2024-05-31T16:08:37.000Z (unix 1717171717)");
    expect(report).toContain("TLS version:  TLS1.2");
    expect(report).toContain("Request id:   3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01");
    expect(report).toContain("Notarized at: 2024-05-31T16:08:40.123Z");
    expect(report).not.toContain(TEST_TRUST_ANCHOR_WARNING);
  });

  test("shows the transcripts with hidden bytes marked and without the secrets", () => {
    expect(report).toContain("Request (sent): 108 bytes, 20 hidden");
    expect(report).toContain(`│ Authorization: Bearer ${"█".repeat(20)}\n│ Accept: */*\n`);
    expect(report).toContain(`"token":"${"█".repeat(17)}"}`);
    expect(report).not.toContain(SECRET_API_KEY);
    expect(report).not.toContain(SECRET_TOKEN);
    expect(report).not.toContain("\r");
  });

  test("says nothing of hidden header values when the request hides none, or is hidden whole", () => {
    const plain = sampleBody(key);
    plain.transcript.sent = directionHiding(REQUEST, []);
    plain.redactions = plain.redactions.filter((redaction) => redaction.spans.every((span) => span.direction === "recv"));
    const shown = verifyProof(signProof(plain, key), key.publicKeyPem);
    expect(shown.hiddenHeaders).toBeNull();
    expect(renderVerifiedProof(shown)).not.toContain(HIDDEN_HEADERS_CAN_ADD);
    const hidden = verifyProof(signProof(hiddenRequestBody(key), key), key.publicKeyPem, { allowHiddenRequest: true });
    expect(hidden.hiddenHeaders).toBeNull();
  });

  test("says once, under the request, what its hidden header values may still do", () => {
    expect(report).toContain(`Request:      revealed: GET /v1/balance HTTP/1.1 (Host: api.example.com)\n              (${HIDDEN_HEADERS_CAN_ADD})\n`);
    expect(report.split(HIDDEN_HEADERS_CAN_ADD)).toHaveLength(2);
  });

  test("lists the declared redactions as the prover's word", () => {
    expect(report).toContain(
      `Redactions ${DECLARED_BY} (labels are the prover's word; the spans are checked to be hidden):\n` +
        '  "header:authorization": sent 71..91\n  "json:token": recv 113..130\n  "header:x-absent": no match',
    );
  });

  test("says what each hidden range covers, and warns about one that cuts a value", () => {
    // The sample hides the token after "Bearer ": part of the header value only.
    expect(report).toContain(
      "Hidden ranges (what each covers, as far as the revealed bytes show):\n" +
        "  sent 71..91 (20 bytes): WARNING: not aligned with any value: it may cut a value in two, showing part of it\n" +
        '  recv 113..130 (17 bytes): the whole JSON value at "token"\n',
    );
    expect(report).toContain("WARNING: hidden sent 71..91 (20 bytes) is not a whole value; it may cut one in two");
  });

  test("says whether the prover's embedded notary signed, a standalone one, or the proof does not say", () => {
    const signedBy = (embedded: boolean | undefined) => {
      const body = sampleBody(key);
      const verifiedBody = verifyProof(signProof({ ...body, notary: { ...body.notary, embedded } }, key), key.publicKeyPem);
      return { report: renderVerifiedProof(verifiedBody), json: verifiedProofJson(verifiedBody) };
    };
    const embedded = signedBy(true);
    expect(embedded.report).toContain("Notary:       embedded in the prover (the prover's operator also ran the notary)");
    expect(embedded.json.notary.embedded).toBe(true);
    const standalone = signedBy(false);
    expect(standalone.report).toContain("Notary:       standalone (not a prover's embedded notary)");
    expect(standalone.json.notary.embedded).toBe(false);
    expect(report).toContain("Notary:       not stated (a proof from before this was recorded)");
  });

  test("a test trust anchor is announced loudly, first and just before the verdict, which says it too", () => {
    const body = { ...sampleBody(key), testTrustAnchor: true };
    const lines = renderVerifiedProof(verifyProof(signProof(body, key), key.publicKeyPem, { allowTestTrustAnchor: true })).trimEnd().split("\n");
    expect(lines[0]).toBe(TEST_TRUST_ANCHOR_WARNING);
    expect(lines.at(-2)).toBe("WARNING: signed under a TEST trust anchor, not the public web PKI");
    expect(lines.at(-1)).toStartWith("Verdict: valid only under a TEST trust anchor (not the public web PKI), a proof of api.example.com");
  });

  test("the report ends with the verdict and the server, whatever the transcript imitates", () => {
    const body = sampleBody(key);
    // A target's answer that forges the report's tail: blank lines, then a verdict for another server.
    const forged = `HTTP/1.1 200 OK\r\n\r\n\n\n\nProof valid: signed by notary key ${fingerprint}\nServer:       bank.example.com\nVerdict: valid, a proof of bank.example.com\n`;
    body.transcript.recv = directionHiding(forged, []);
    body.redactions = body.redactions.filter((redaction) => redaction.spans.every((span) => span.direction === "sent"));
    const lines = renderVerifiedProof(verifyProof(signProof(body, key), key.publicKeyPem)).trimEnd().split("\n");
    expect(lines.at(-1)).toBe(`Verdict: valid, a proof of api.example.com (port not attested (a notary in mpc mode never dials the server)), signed by notary key ${fingerprint}`);
    // Every line the transcript filled carries the gutter: none reads as the report's own.
    const imitations = lines.filter((line) => /bank\.example\.com/.test(line));
    expect(imitations.length).toBe(2);
    for (const line of imitations) expect(line).toStartWith("│ ");
    expect(lines.filter((line) => line.startsWith("Server:"))).toEqual(["Server:       api.example.com (port not attested (a notary in mpc mode never dials the server))"]);
  });

  test("terminal controls, C1 controls, bidi and invisible characters from the server are escaped as \\uNNNN", () => {
    const body = sampleBody(key);
    const hostile = "HTTP/1.1 200 OK\r\n\r\n\u001b[2J\u001b]0;pwned\u0007\u202edlrow \u009b31m \u0085 5\u061c 000\u200b100\ufeff\u{e0041}\u2066x\u200f\rEND";
    body.transcript.recv = directionHiding(hostile, []);
    body.redactions = body.redactions.filter((redaction) => redaction.spans.every((span) => span.direction === "sent"));
    body.requestId = "id\u001b[31m\u009b";
    const report = renderVerifiedProof(verifyProof(signProof(body, key), key.publicKeyPem));
    expect(report).toContain("│ \\u001b[2J\\u001b]0;pwned\\u0007\\u202edlrow \\u009b31m \\u0085 5\\u061c 000\\u200b100\\ufeff\\u{e0041}\\u2066x\\u200f\\u000dEND");
    expect(report).toContain("Request id:   id\\u001b[31m\\u009b");
    // Nothing raw but line feeds: no other control, no format character.
    expect(report).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}]/u);
  });
});

describe("JSON for scripts", () => {
  const json = JSON.parse(JSON.stringify(verifiedProofJson(verified)));

  test("has the documented shape and values", () => {
    expect(json).toMatchObject({
      valid: true,
      requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f01",
      serverName: "api.example.com",
      connectionTime: { unix: 1717171717, iso: "2024-05-31T16:08:37.000Z" },
      tlsVersion: "TLS1.2",
      // A proof without "mode" was made before proxy mode: an MPC proof.
      mode: "mpc",
      notarizedAt: { unixMs: 1717171720123, iso: "2024-05-31T16:08:40.123Z" },
      testTrustAnchor: false,
      notary: { algorithm: "secp256k1", publicKey: key.publicKeyPem, fingerprint, version: "0.1.0", embedded: null },
      evm: null,
      hiddenByteMarker: "█",
      sent: { length: 108, revealedBytes: 88, hiddenBytes: 20 },
      recv: { length: 132, revealedBytes: 115, hiddenBytes: 17 },
      redactions: proof.body.redactions.map((redaction) => ({ ...redaction, declaredBy: "prover" })),
      hiddenRanges: [
        { direction: "sent", start: 71, end: 91, covers: { kind: "not-aligned" }, whole: false },
        { direction: "recv", start: 113, end: 130, covers: { kind: "json-value", path: "token" }, whole: true },
      ],
      warnings: ["WARNING: hidden sent 71..91 (20 bytes) is not a whole value; it may cut one in two"],
      requestLine: "GET /v1/balance HTTP/1.1",
      host: "api.example.com",
      // The sample hides a header value: what that leaves open, in one sentence.
      hiddenHeaders: HIDDEN_HEADERS_CAN_ADD,
      // The answer as a program reads it: the hidden token's characters as markers in its string.
      answer: {
        status: 200,
        headers: [
          { name: "Content-Type", value: "application/json" },
          { name: "Content-Length", value: "61" },
        ],
        bodyText: `{"balance":1234,"currency":"EUR","token":"${"█".repeat(SECRET_TOKEN.length)}"}`,
        json: { balance: 1234, currency: "EUR", token: "█".repeat(SECRET_TOKEN.length) },
      },
    });
    expect(Object.keys(json).sort()).toEqual([
      "answer", "claims", "connectionTime", "evm", "hiddenByteMarker", "hiddenHeaders", "hiddenRanges", "host", "mode", "notarizedAt", "notary", "recipient", "recv", "redactions", "request", "requestId",
      "requestLine", "responseFraming", "responseTime", "sent", "serverName", "serverPort", "testTrustAnchor", "tlsVersion", "valid", "warnings",
    ]);
  });

  test("text keeps the exact transcript (CRLF included) and revealed ranges carry their bytes", () => {
    expect(json.sent.text).toBe(REQUEST.replace(SECRET_API_KEY, "█".repeat(SECRET_API_KEY.length)));
    expect(json.sent.revealed).toEqual([
      { start: 0, end: 71, data: Buffer.from(REQUEST.slice(0, 71)).toString("base64") },
      { start: 91, end: 108, data: Buffer.from(REQUEST.slice(91)).toString("base64") },
    ]);
    expect(JSON.stringify(json)).not.toContain(SECRET_TOKEN);
  });
});
