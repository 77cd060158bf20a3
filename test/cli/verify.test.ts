import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { generateKey } from "../../src/proof/keys.ts";
import { signProof } from "../../src/proof/sign.ts";
import { HIDDEN_REQUEST_LIMIT, TEST_TRUST_ANCHOR_WARNING, UNCHECKED_ANSWER_WARNING } from "../../src/proof/verify.ts";
import {
  directionHiding,
  hiddenRequestBody,
  legacySampleBody,
  REPO,
  runCommandModule,
  sampleBody,
  SECRET_API_KEY,
  SECRET_TOKEN,
  signedSample,
  tempDir,
} from "../proof/fixtures.ts";

const VERIFY = "src/cli/verify.ts";
const dir = tempDir();
const { key, proof } = signedSample();
const pubPath = join(dir, "notary.pub");
const proofPath = join(dir, "proof.json");
writeFileSync(pubPath, key.publicKeyPem);
writeFileSync(proofPath, JSON.stringify(proof, null, 2));

const verify = (...args: string[]) => runCommandModule(VERIFY, args);

/** AppErrors print exactly one line, and no stack trace. */
function expectOneErrorLine(stderr: string, message: string | RegExp): void {
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(message);
  expect(stderr).not.toContain("    at ");
}

describe("cli verify", () => {
  test("a valid proof: exit 0 and what was proven", async () => {
    const { exitCode, stdout, stderr } = await verify("--notary-pub-key", pubPath, "--proof", proofPath);
    expect(stderr).toBe("");
    expect(exitCode).toBe(0);
    expect(stdout).toContain("Proof valid: signed by notary key sha256:");
    expect(stdout).toContain("Server:       api.example.com");
    expect(stdout).toContain(`Authorization: Bearer ${"█".repeat(SECRET_API_KEY.length)}`);
    expect(stdout).not.toContain(SECRET_API_KEY);
    expect(stdout).not.toContain(SECRET_TOKEN);
  });

  test("--json prints the verified content for scripts", async () => {
    const { exitCode, stdout } = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--json");
    expect(exitCode).toBe(0);
    const json = JSON.parse(stdout);
    expect(json.valid).toBe(true);
    expect(json.serverName).toBe("api.example.com");
    expect(json.connectionTime).toEqual({ unix: 1717171717, iso: "2024-05-31T16:08:37.000Z" });
    expect(json.notary.publicKey).toBe(key.publicKeyPem);
    expect(json.recv.text).toEndWith(`"token":"${"█".repeat(SECRET_TOKEN.length)}"}`);
    expect(stdout).not.toContain(SECRET_TOKEN);
  });

  test("--proof - reads stdin", async () => {
    const { exitCode, stdout } = await runCommandModule(VERIFY, ["--notary-pub-key", pubPath, "--proof", "-", "--json"], JSON.stringify(proof));
    expect(exitCode).toBe(0);
    expect(JSON.parse(stdout).requestId).toBe(proof.body.requestId);
  });

  test("a tampered proof: exit 1 with the reason", async () => {
    const tampered = join(dir, "tampered.json");
    writeFileSync(tampered, JSON.stringify({ ...proof, body: { ...proof.body, serverName: "api.example.org" } }));
    const { exitCode, stdout, stderr } = await verify("--notary-pub-key", pubPath, "--proof", tampered);
    expect(exitCode).toBe(1);
    expect(stdout).toBe("");
    expectOneErrorLine(stderr, "error: invalid proof: signature does not match: the proof was altered or not signed by this key");
  });

  test("a proof file with a duplicate key anywhere: exit 1, naming the key and where", async () => {
    // The last key wins in JSON.parse, so the signature still matches: only the duplicate check catches it.
    const text = JSON.stringify(proof).replace('"serverName":', '"serverName":"evil.example","serverName":');
    const duplicated = join(dir, "duplicated.json");
    writeFileSync(duplicated, text);
    const { exitCode, stdout, stderr } = await verify("--notary-pub-key", pubPath, "--proof", duplicated);
    expect(exitCode).toBe(1);
    expect(stdout).toBe("");
    expectOneErrorLine(stderr, 'error: invalid proof: duplicate key "serverName" at body');
  });

  test("redaction labels are shown as declared by the prover; a range cutting a value is warned about", async () => {
    const human = await verify("--notary-pub-key", pubPath, "--proof", proofPath);
    expect(human.stdout).toContain("Redactions declared by the prover (labels are the prover's word");
    expect(human.stdout).toContain('recv 113..130 (17 bytes): the whole JSON value at "token"');
    expect(human.stdout).toContain("WARNING: hidden sent 71..91 (20 bytes) is not a whole value; it may cut one in two");
    const json = JSON.parse((await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--json")).stdout);
    expect(json.redactions.map((r: { declaredBy: string }) => r.declaredBy)).toEqual(["prover", "prover", "prover"]);
    expect(json.warnings).toHaveLength(1);
    expect(json.hiddenRanges[1].covers).toEqual({ kind: "json-value", path: "token" });
  });

  test("a key file holding several notaries' keys: valid when one of them signed, refused when none did", async () => {
    const [foreignA, foreignB] = [generateKey("secp256k1").publicKeyPem, generateKey("secp256r1").publicKeyPem];
    const several = join(dir, "notaries.pub");
    writeFileSync(several, `${foreignA}${key.publicKeyPem}\n${foreignB}`);
    const valid = await verify("--notary-pub-key", several, "--proof", proofPath, "--json");
    expect(valid.exitCode).toBe(0);
    expect(JSON.parse(valid.stdout).notary.publicKey).toBe(key.publicKeyPem);
    const none = join(dir, "none-of-them.pub");
    writeFileSync(none, `${foreignA}${foreignB}`);
    const refused = await verify("--notary-pub-key", none, "--proof", proofPath);
    expect(refused.exitCode).toBe(1);
    expectOneErrorLine(refused.stderr, /^error: invalid proof: signed by a different notary key \(sha256:[0-9a-f]{64}, expected sha256:[0-9a-f]{64} or sha256:[0-9a-f]{64}\)$/);
  });

  test("a proof checked against another notary's key: exit 1, foreign key", async () => {
    const otherPub = join(dir, "other.pub");
    writeFileSync(otherPub, generateKey("secp256k1").publicKeyPem);
    const { exitCode, stderr } = await verify("--notary-pub-key", otherPub, "--proof", proofPath);
    expect(exitCode).toBe(1);
    expectOneErrorLine(stderr, /^error: invalid proof: signed by a different notary key \(sha256:/);
  });

  test("a truncated proof file: exit 1, not JSON", async () => {
    const truncated = join(dir, "truncated.json");
    writeFileSync(truncated, readFileSync(proofPath, "utf8").slice(0, 300));
    const { exitCode, stderr } = await verify("--notary-pub-key", pubPath, "--proof", truncated);
    expect(exitCode).toBe(1);
    expectOneErrorLine(stderr, /^error: invalid proof: not JSON \(/);
  });

  test("a missing proof file: exit 2, naming it", async () => {
    const { exitCode, stderr } = await verify("--notary-pub-key", pubPath, "--proof", join(dir, "absent.json"));
    expect(exitCode).toBe(2);
    expectOneErrorLine(stderr, `error: cannot read proof file ${join(dir, "absent.json")}: ENOENT: no such file or directory, open '${join(dir, "absent.json")}'`);
  });

  test("a missing or garbage key file: exit 2", async () => {
    const missing = await verify("--notary-pub-key", join(dir, "absent.pub"), "--proof", proofPath);
    expect(missing.exitCode).toBe(2);
    expectOneErrorLine(missing.stderr, /^error: cannot read key file .*absent\.pub: ENOENT/);
    const garbage = await verify("--notary-pub-key", proofPath, "--proof", proofPath);
    expect(garbage.exitCode).toBe(2);
    expectOneErrorLine(garbage.stderr, /^error: key file .*proof\.json: not a PEM public key/);
  });

  test("missing flags are usage errors: exit 2", async () => {
    const noKey = await verify("--proof", proofPath);
    expect(noKey.exitCode).toBe(2);
    expect(noKey.stderr).toContain("error: Missing required argument: --notary-pub-key");
    const noProof = await verify("--notary-pub-key", pubPath);
    expect(noProof.exitCode).toBe(2);
    expect(noProof.stderr).toContain("error: Missing required argument: --proof");
    const empty = await verify("--notary-pub-key", pubPath, "--proof", "");
    expect(empty.exitCode).toBe(2);
    expectOneErrorLine(empty.stderr, "error: --proof needs a file path");
  });

  test("--request-id and --server-name: exit 0 when the proof is of them (case-blind, a trailing dot aside), exit 1 naming the mismatch", async () => {
    const { requestId, serverName } = proof.body;
    const met = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--request-id", requestId.toUpperCase(), "--server-name", serverName);
    expect(met.exitCode).toBe(0);
    const fullyQualified = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--server-name", `${serverName.toUpperCase()}.`);
    expect(fullyQualified.exitCode).toBe(0);
    const otherId = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--request-id", "0b6f8a8e-5f0c-4a63-9d7e-1c2b3a4d5e6f");
    expect(otherId.exitCode).toBe(1);
    expect(otherId.stdout).toBe("");
    expectOneErrorLine(otherId.stderr, `error: the proof is of request id ${requestId}, expected 0b6f8a8e-5f0c-4a63-9d7e-1c2b3a4d5e6f`);
    const otherServer = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--server-name=evil.example");
    expect(otherServer.exitCode).toBe(1);
    expectOneErrorLine(otherServer.stderr, `error: the proof is of server ${serverName}, expected evil.example`);
  });

  test("an option the command does not know: exit 2, one line naming it", async () => {
    for (const option of ["--request", "--server-name-x=a", "-x"]) {
      const { exitCode, stdout, stderr } = await verify("--notary-pub-key", pubPath, "--proof", proofPath, option, "value");
      expect(exitCode).toBe(2);
      expect(stdout).toBe("");
      expectOneErrorLine(stderr, `error: unknown option ${option.split("=")[0]}`);
    }
    // Values of known options are not options, even when they start with a dash; --no-<flag> negates a flag.
    expect((await runCommandModule(VERIFY, ["--notary-pub-key", pubPath, "--proof", "-", "--no-json"], JSON.stringify(proof))).exitCode).toBe(0);
  });

  test("every command refuses unknown options (keygen as another example)", async () => {
    const { exitCode, stderr } = await runCommandModule("src/cli/notary.ts", ["keygen", "--out", join(dir, "keys"), "--frce"]);
    expect(exitCode).toBe(2);
    expectOneErrorLine(stderr, "error: unknown option --frce");
  });

  test("the report says how the answer was checked, when the exchange ended, and that the request is revealed", async () => {
    const human = await verify("--notary-pub-key", pubPath, "--proof", proofPath);
    expect(human.stdout).toContain("Server:       api.example.com (port not attested (a notary in mpc mode never dials the server))");
    expect(human.stdout).toContain("Answered by:  2024-05-31T16:08:38.000Z (unix 1717171718)");
    expect(human.stdout).toContain("Answer:       one complete HTTP/1.1 answer, framed by its Content-Length (content-length), checked by the notary");
    expect(human.stdout).toContain("Request:      revealed: GET /v1/balance HTTP/1.1 (Host: api.example.com)");
    const json = JSON.parse((await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--json")).stdout);
    expect(json).toMatchObject({
      serverPort: null,
      responseTime: { unix: 1717171718 },
      responseFraming: "content-length",
      request: "revealed",
      requestLine: "GET /v1/balance HTTP/1.1",
      host: "api.example.com",
    });
  });

  test("--method and --url: exit 0 when the request shows them, exit 1 naming another, exit 2 for a URL that is not https", async () => {
    const asked = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--method", "get", "--url", "https://api.example.com/v1/balance");
    expect(asked.exitCode).toBe(0);
    for (const [flags, message] of [
      [["--method", "POST"], 'error: the proof\'s request method is "GET", not the expected POST'],
      [["--url", "https://api.example.com/v1/balance?all=1"], 'error: the proof\'s request target is not the expected 17-byte "/v1/balance?all=1"'],
      [["--url", "https://api.example.com/v1/balanze"], 'error: the proof\'s request target differs from the expected "/v1/balanze" at byte 9'],
      [["--url", "https://evil.example/v1/balance"], "error: the proof is of server api.example.com, not the expected URL's evil.example"],
    ] as const) {
      const other = await verify("--notary-pub-key", pubPath, "--proof", proofPath, ...flags);
      expect(other.exitCode).toBe(1);
      expect(other.stdout).toBe("");
      expectOneErrorLine(other.stderr, message);
    }
    const usage = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--url", "http://api.example.com/v1/balance");
    expect(usage.exitCode).toBe(2);
    expectOneErrorLine(usage.stderr, "error: --url must be an https:// URL");
  });

  test("--mode: exit 0 when the proof is of that mode, exit 1 naming the mismatch, exit 2 for another word", async () => {
    expect((await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--mode", "mpc")).exitCode).toBe(0);
    const other = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--mode", "proxy");
    expect(other.exitCode).toBe(1);
    expect(other.stdout).toBe("");
    expectOneErrorLine(other.stderr, "error: the proof is of mode mpc, expected proxy");
    const unknown = await verify("--notary-pub-key", pubPath, "--proof", proofPath, "--mode", "fast");
    expect(unknown.exitCode).toBe(2);
    expectOneErrorLine(unknown.stderr, "error: --mode must be one of mpc, proxy");
  });

  test("a proof of a mode this verifier does not know: exit 1 naming it, however well signed", async () => {
    const unknownPath = join(dir, "unknown-mode.json");
    writeFileSync(unknownPath, JSON.stringify(signProof({ ...proof.body, mode: "tee", serverPort: 443 }, key)));
    const refused = await verify("--notary-pub-key", pubPath, "--proof", unknownPath);
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe("");
    expectOneErrorLine(refused.stderr, 'error: invalid proof: body.mode: unknown proof mode "tee" (this verifier knows mpc, proxy)');
  });

  test("a proof whose request is hidden: exit 1 saying what it does not prove, unless --allow-hidden-request", async () => {
    const hiddenPath = join(dir, "hidden-request.json");
    writeFileSync(hiddenPath, JSON.stringify(signProof(hiddenRequestBody(key), key)));
    const refused = await verify("--notary-pub-key", pubPath, "--proof", hiddenPath);
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe("");
    expectOneErrorLine(refused.stderr, `error: the proof's ${HIDDEN_REQUEST_LIMIT}; accept such a proof only on purpose (cli verify --allow-hidden-request, verifyProof's allowHiddenRequest)`);
    const accepted = await verify("--notary-pub-key", pubPath, "--proof", hiddenPath, "--allow-hidden-request", "--mode", "proxy");
    expect(accepted.exitCode).toBe(0);
    expect(accepted.stdout.split("\n")[0]).toBe(`WARNING: this proof's ${HIDDEN_REQUEST_LIMIT}`);
    expect(accepted.stdout).toContain(`Request:      HIDDEN: this proof's ${HIDDEN_REQUEST_LIMIT}`);
    expect(accepted.stdout).toContain("Server:       api.example.com (port 443, dialled by the notary)");
    const json = JSON.parse((await verify("--notary-pub-key", pubPath, "--proof", hiddenPath, "--allow-hidden-request", "--json")).stdout);
    expect(json).toMatchObject({ request: "hidden", serverPort: 443, mode: "proxy", requestLine: null, host: null });
  });

  test("an older proof without the answer's check is still valid, and says what it lacks", async () => {
    const olderPath = join(dir, "older.json");
    writeFileSync(olderPath, JSON.stringify(signProof(legacySampleBody(key), key)));
    const human = await verify("--notary-pub-key", pubPath, "--proof", olderPath);
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toContain("Answer:       not checked (a proof from before notaries checked answers)");
    expect(human.stdout).toContain("Answered by:  not stated (an older proof)");
    expect(human.stdout).toContain(UNCHECKED_ANSWER_WARNING);
    const json = JSON.parse((await verify("--notary-pub-key", pubPath, "--proof", olderPath, "--json")).stdout);
    expect(json).toMatchObject({ responseTime: null, responseFraming: null, serverPort: null, request: "revealed", mode: "mpc" });
  });

  test("a test trust anchor proof: exit 1 (proof_mismatch) unless accepted on purpose; then the warning in the report and in --json's warnings", async () => {
    const body = { ...proof.body, testTrustAnchor: true };
    const testProof = join(dir, "test-anchor.json");
    writeFileSync(testProof, JSON.stringify(signProof(body, key)));
    const refused = await verify("--notary-pub-key", pubPath, "--proof", testProof);
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain("TEST trust anchor");
    expect(refused.stderr).toContain("--allow-test-anchor");
    const json = await verify("--notary-pub-key", pubPath, "--proof", testProof, "--json", "--allow-test-anchor");
    expect(json.exitCode).toBe(0);
    expect(JSON.parse(json.stdout).warnings).toContain(TEST_TRUST_ANCHOR_WARNING);
    const human = await verify("--notary-pub-key", pubPath, "--proof", testProof, "--allow-test-anchor");
    expect(human.stdout.split("\n")[0]).toBe(TEST_TRUST_ANCHOR_WARNING);
    // The ordinary proof needs no opt-in.
    expect((await verify("--notary-pub-key", pubPath, "--proof", proofPath)).exitCode).toBe(0);
  });

  test("needs neither the engine nor wasm: no import path leads there", () => {
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, specifier = ""] of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        expect(specifier).not.toContain("tlsn-wasm");
        if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier));
      }
    };
    visit(join(REPO, VERIFY));
    expect(seen.size).toBeGreaterThan(5);
    expect([...seen].filter((file) => file.includes("/src/engine/"))).toEqual([]);
  });
});

describe("cli verify on hostile files: nothing it writes acts on a terminal", () => {
  /** Any raw control or format character but the line feed: an ESC, a C1 CSI, a bidi override. */
  const ACTIVE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}]/u;
  const GREEN_VALID = "\u001b[32mProof valid: signed by notary key sha256:0000\u001b[0m";

  test.each([
    ["an error event whose code holds ANSI escapes", JSON.stringify({ code: `\u001b[2K\r${GREEN_VALID}\u001b[8m`, message: "x" })],
    ["an object whose keys hold ANSI escapes", JSON.stringify({ [`\u001b[1A\u001b[2K${GREEN_VALID}`]: 1 })],
    ["an error answer with C1 controls in its message", JSON.stringify({ error: { code: "x", message: "\u009b2K\u0085\u202egnirts" } })],
  ])("%s: exit 1, one line, no ESC or other active byte", async (_, text) => {
    const path = join(dir, "hostile.json");
    writeFileSync(path, text);
    const { exitCode, stdout, stderr } = await verify("--notary-pub-key", pubPath, "--proof", path);
    expect(exitCode).toBe(1);
    expect(stdout).toBe("");
    expectOneErrorLine(stderr, /^error: the file holds /);
    expect(stderr.trimEnd()).not.toMatch(ACTIVE);
    expect(stderr).toMatch(/\\u00(1b|9b)/);
  });

  test("an unknown option's name is shown escaped", async () => {
    const { exitCode, stderr } = await verify(`--\u001b[32mproof`, proofPath);
    expect(exitCode).toBe(2);
    expect(stderr.trimEnd()).not.toMatch(ACTIVE);
    expect(stderr).toContain("unknown option --\\u001b[32mproof");
  });

  test("--json escapes DEL, C1 and format characters, and still parses to the same text", async () => {
    const body = sampleBody(key);
    const hostile = "HTTP/1.1 200 OK\r\n\r\n\u007f\u009b31m\u0085\u202e\u200b";
    body.transcript.recv = directionHiding(hostile, []);
    body.redactions = body.redactions.filter((redaction) => redaction.spans.every((span) => span.direction === "sent"));
    const path = join(dir, "c1.json");
    writeFileSync(path, JSON.stringify(signProof(body, key)));
    const { exitCode, stdout } = await verify("--notary-pub-key", pubPath, "--proof", path, "--json");
    expect(exitCode).toBe(0);
    expect(stdout).not.toMatch(ACTIVE);
    expect(stdout).toContain("\\u009b31m\\u0085\\u202e\\u200b");
    expect(JSON.parse(stdout).recv.text).toBe(hostile);
  });
});

describe("cli verify --quorum", () => {
  const notaries = [generateKey("secp256k1"), generateKey("secp256k1"), generateKey("secp256k1")];
  const quorumDir = tempDir();
  const keysPath = join(quorumDir, "notaries.pub");
  writeFileSync(keysPath, notaries.map((notary) => notary.publicKeyPem).join(""));
  const paths = notaries.map((notary, i) => {
    const path = join(quorumDir, `proof-${i}.json`);
    writeFileSync(path, JSON.stringify(signProof({ ...sampleBody(notary), requestId: crypto.randomUUID() }, notary)));
    return path;
  });
  const proofs = (count: number) => paths.slice(0, count).flatMap((path) => ["--proof", path]);

  test("M proofs by M distinct notaries of the key file, stating the same claims: exit 0, the claims and signers", async () => {
    const { exitCode, stdout } = await verify("--notary-pub-key", keysPath, "--quorum", "3", ...proofs(3));
    expect(exitCode).toBe(0);
    expect(stdout).toContain("Quorum valid (at least 3): 3 proofs of api.example.com by 3 distinct notaries show one request and state the same claims:");
    expect(stdout).toContain('  res:body:currency = "EUR"');
    const json = JSON.parse((await verify("--notary-pub-key", keysPath, "--quorum", "2", "--json", ...proofs(2))).stdout) as { quorum: number; notaries: string[]; claims: { valueJson: string }[] };
    expect(json.quorum).toBe(2);
    expect(json.notaries).toHaveLength(2);
    expect(json.claims.map((claim) => claim.valueJson)).toEqual(['"EUR"']);
  });

  test("fewer proofs than the quorum, a key file missing a signer, several proofs without --quorum: refused", async () => {
    const short = await verify("--notary-pub-key", keysPath, "--quorum", "3", ...proofs(2));
    expect(short.exitCode).toBe(1);
    expectOneErrorLine(short.stderr, /not a quorum of 3: 2 distinct notaries signed them/);
    const onePinned = join(quorumDir, "one.pub");
    writeFileSync(onePinned, notaries[0]!.publicKeyPem);
    const foreign = await verify("--notary-pub-key", onePinned, "--quorum", "2", ...proofs(2));
    expect(foreign.exitCode).toBe(1);
    expectOneErrorLine(foreign.stderr, /proof 2: invalid proof: signed by a different notary key/);
    const noQuorum = await verify("--notary-pub-key", keysPath, ...proofs(2));
    expect(noQuorum.exitCode).toBe(2);
    expect((await verify("--notary-pub-key", keysPath, "--quorum", "0", ...proofs(2))).exitCode).toBe(2);
  });
});
