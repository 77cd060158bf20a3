import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Proof } from "../../src/proof/format.ts";
import type { RevealedKeys } from "../../src/tls/verify-session.ts";
import type { RequestPart } from "../../src/tls/client/exchange.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { type MaliciousSessionOptions, type NotaryAnswer, openMaliciousSession, runEpochSession } from "../../testkit/malicious-prover.ts";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary } from "../../testkit/notary.ts";
import { verifyWithCli } from "../../testkit/prove.ts";
import { type VersionedTarget, startVersionedTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * A standalone `cli notary start` offering proxy mode, driven by a prover that speaks its wire protocol itself
 * (testkit/malicious-prover.ts) and writes requests in epochs with our own TLS 1.3 client, hiding whatever it likes
 * and revealing whatever keys and layouts it likes. Each forgery is refused by the notary on its own, with its reason;
 * the honest session beside it is signed. TLS 1.2: the request revealed by the master secret, or refused.
 */
const KEY = "epoch-forgery-test-key-91d2";
/** The notary's proxy.max_hidden_span, bytes. */
const MAX_HIDDEN = 64;
const CREDENTIAL = "Bearer epoch-forgery-credential-Zq81";

const tls = tlsFixture();
let notary: KeyedNotary;
const targets: Record<"tls13" | "tls12", VersionedTarget> = {} as never;

beforeAll(async () => {
  targets.tls13 = await startVersionedTarget(tls, "TLSv1.3");
  targets.tls12 = await startVersionedTarget(tls, "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256");
  const ports = Object.values(targets).map((target) => target.port);
  notary = await startKeyedNotary(KEY, [
    "host: 127.0.0.1",
    "port: 0",
    "notarization:",
    "  private_key_path: notary.key",
    ...proxyToLocalTargets(ports),
    `  max_hidden_span: ${MAX_HIDDEN}`,
  ]);
}, 120_000);

afterAll(() => {
  notary?.notary.process.kill("SIGKILL");
  for (const target of Object.values(targets)) target?.stop();
});

const options = (port: number): MaliciousSessionOptions => ({ notaryUrl: notary.notary.url, apiKey: KEY, serverName: TARGET_HOST, port, caPem: tls.caPem });
const encoder = new TextEncoder();
const shown = (text: string): RequestPart => ({ bytes: encoder.encode(text), hidden: false });
const hidden = (text: string): RequestPart => ({ bytes: encoder.encode(text), hidden: true });
const host = () => `${TARGET_HOST}:${targets.tls13.port}`;

/** GET /account?user=42 with its Authorization value in a hidden epoch, written last: what the honest prover writes. */
const honestParts = (credential = CREDENTIAL): RequestPart[] => [
  shown(`GET /account?user=42 HTTP/1.1\r\nHost: ${host()}\r\nAccept: application/json\r\nConnection: close\r\nAuthorization: `),
  hidden(credential),
  shown("\r\n\r\n"),
];

const epochSession = (parts: RequestPart[]) => runEpochSession(options(targets.tls13.port), parts);
const refusal = (answer: NotaryAnswer) => ({ status: answer.status, code: answer.body.error?.code, message: answer.body.error?.message ?? "" });
const flipHex = (hex: string): string => (Number.parseInt(hex.slice(0, 2), 16) ^ 1).toString(16).padStart(2, "0") + hex.slice(2);

describe("a request written in epochs", () => {
  test("honest: signed, the request line and Host revealed, the credential hidden from the notary and the proof", async () => {
    const session = await epochSession(honestParts());
    const answer = await session.attest();
    expect(answer.status).toBe(200);
    const proof = answer.body as unknown as Proof;
    expect(proof.body).toMatchObject({ mode: "proxy", request: "revealed", tlsVersion: "TLS1.3" });
    const url = `https://${host()}/account?user=42`;
    const verified = await verifyWithCli(JSON.stringify(proof), notary.pubPath, "--json", "--method", "GET", "--url", url);
    expect(verified.exitCode).toBe(0);
    const report = JSON.parse(verified.stdout);
    expect(report).toMatchObject({ requestLine: "GET /account?user=42 HTTP/1.1", host: host() });
    expect(report.sent.text).toContain(`Authorization: ${"█".repeat(CREDENTIAL.length)}\r\n`);
    expect(JSON.stringify(proof)).not.toContain(CREDENTIAL.slice(7));
  }, 30_000);

  test("revealed epoch keys that do not authenticate the recorded records are refused", async () => {
    const session = await epochSession(honestParts());
    const epochs = structuredClone(session.honestKeys.clientEpochs!);
    epochs[2]!.key = flipHex(epochs[2]!.key!);
    expect(refusal(await session.attest({ keys: { ...session.honestKeys, clientEpochs: epochs } }))).toEqual({
      status: 422,
      code: "transcript_invalid",
      message: "client epoch 2's revealed key does not authenticate the record the layout starts it at: the key is wrong or the epoch boundaries do not match the records",
    });
  }, 30_000);

  test("epoch boundaries that do not match the records are refused", async () => {
    const twoHidden = () => epochSession([...honestParts().slice(0, 2), shown("\r\nAccept: application/json\r\nX-Other: "), hidden("other-value"), shown("\r\nConnection: close\r\n\r\n")]);
    // The hidden epoch 1 said one record longer: the revealed epoch 2 seems to start at its own second record.
    const shortened = await twoHidden();
    const epochs = structuredClone(shortened.honestKeys.clientEpochs!);
    epochs[1]!.records += 1;
    epochs[2]!.records -= 1;
    expect(refusal(await shortened.attest({ keys: { ...shortened.honestKeys, clientEpochs: epochs } }))).toEqual({
      status: 422,
      code: "transcript_invalid",
      message: "client epoch 2's revealed key does not authenticate the record the layout starts it at: the key is wrong or the epoch boundaries do not match the records",
    });
    // The revealed epoch 0 said one record longer: its KeyUpdate is no longer its last record.
    const lengthened = await twoHidden();
    const longer = structuredClone(lengthened.honestKeys.clientEpochs!);
    longer[0]!.records += 1;
    longer[1]!.records -= 1;
    expect(refusal(await lengthened.attest({ keys: { ...lengthened.honestKeys, clientEpochs: longer } }))).toEqual({
      status: 422,
      code: "transcript_invalid",
      message: "client epoch 0 holds a KeyUpdate where the layout does not end it: the epoch boundaries do not match the records",
    });
    // Fewer epochs than the connection had: the last one's key meets the records the layout left out.
    const dropped = await twoHidden();
    const fewer = structuredClone(dropped.honestKeys.clientEpochs!).slice(0, 3);
    expect(refusal(await dropped.attest({ keys: { ...dropped.honestKeys, clientEpochs: fewer } }))).toMatchObject({ status: 422, code: "transcript_invalid" });
  }, 30_000);

  test("a hidden epoch the redactions do not declare is refused: the proof must account for every hidden byte", async () => {
    const session = await epochSession(honestParts());
    const [span] = session.hiddenSpans;
    expect(refusal(await session.attest({ redactions: [] }))).toEqual({
      status: 400,
      code: "invalid_body",
      message: `declared redactions refused: the request's bytes ${span!.start}..${span!.end} were hidden from the notary, but no declared span hides them`,
    });
  }, 30_000);

  test.each([
    ["over the request line's target", [shown("GET /"), hidden("account?user=42"), shown(` HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nConnection: close\r\n\r\n`)], /^request refused: the hidden span at bytes 5\.\.20 starts before the end of the Host header; the request line and Host must be revealed whole$/],
    ["over the Host value", [shown("GET /a HTTP/1.1\r\nHost: "), hidden(TARGET_HOST), shown("\r\nConnection: close\r\n\r\n")], /^request refused: the request's Host header value is hidden$/],
  ])("a hidden span %s is refused", async (_, parts, message) => {
    // The Host names the dialled port, as an honest one does: only the hidden span is wrong.
    const session = await epochSession(parts.map((part) => ({ ...part, bytes: encoder.encode(new TextDecoder().decode(part.bytes).replace(TARGET_HOST, host())) })));
    const refused = refusal(await session.attest());
    expect(refused.message).toMatch(message);
    // The Host rule is every proof's (400); the request rule's refusal has its code (422).
    expect(refused).toMatchObject(/Host header value/.test(refused.message) ? { status: 400, code: "invalid_body" } : { status: 422, code: "request_unproven" });
  }, 30_000);

  test("a second Host in a hidden span where a header line would be, or revealed with its value hidden, is refused", async () => {
    const asLine = await epochSession([shown(`GET /a HTTP/1.1\r\nHost: ${host()}\r\n`), hidden("Host: evil.example"), shown("\r\nConnection: close\r\n\r\n")]);
    expect(refusal(await asLine.attest())).toEqual({ status: 400, code: "invalid_body", message: "request refused: a field name in the request's head is hidden" });
    const asValue = await epochSession([shown(`GET /a HTTP/1.1\r\nHost: ${host()}\r\nHost: `), hidden("evil.example"), shown("\r\nConnection: close\r\n\r\n")]);
    expect(refusal(await asValue.attest())).toEqual({ status: 400, code: "invalid_body", message: "request refused: the request must reveal exactly one Host header (found 2)" });
  }, 30_000);

  test("a body hidden whole is signed, the proof showing its length only; a body hidden in part is refused", async () => {
    const body = "raw-body-bytes-12345";
    const head = `POST /a HTTP/1.1\r\nHost: ${host()}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const whole = await (await epochSession([shown(head), hidden(body)])).attest();
    expect(whole.status).toBe(200);
    expect(JSON.stringify(whole.body)).not.toContain(Buffer.from(body).toString("base64").slice(0, 12));
    const part = await epochSession([shown(head), hidden(body.slice(0, 8)), shown(body.slice(8))]);
    const [span] = part.hiddenSpans;
    expect(refusal(await part.attest())).toEqual({
      status: 422,
      code: "request_unproven",
      message: `request refused: the hidden span at bytes ${span!.start}..${span!.end} hides part of the body; a body holding a hidden value is hidden whole`,
    });
  }, 30_000);

  /**
   * A prover speaking the notary's protocol itself: a hidden span that may hold a blank line and a first request,
   * then revealed bytes the server would read as something else. The notary refuses on the layout it saw.
   */
  test.each([
    ["the header swap: a revealed header after the hidden credential", [shown(`GET /balance HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nAuthorization: `), hidden("Bearer tok\r\nX-Account: 666"), shown("\r\nX-Account: 42\r\nConnection: close\r\n\r\n")]],
    ["the body swap: a revealed body after a hidden header value", [shown(`POST /transfer HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nContent-Length: 25\r\nConnection: close\r\nAuthorization: `), hidden("Bearer tok"), shown('\r\n\r\n{"to":"bob","amount":100}')]],
    ["the JSON duplicate member: a hidden body value before a revealed member", [shown(`POST /transfer HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nContent-Length: 38\r\nConnection: close\r\n\r\n{"amount":`), hidden('1,"to":"mallory"'), shown(',"to":"bob"}')]],
  ])("%s is refused (422 request_unproven)", async (_, parts) => {
    const session = await epochSession(parts.map((part) => ({ ...part, bytes: encoder.encode(new TextDecoder().decode(part.bytes).replace(TARGET_HOST, host())) })));
    const refused = refusal(await session.attest());
    expect(refused).toMatchObject({ status: 422, code: "request_unproven" });
    expect(refused.message).toMatch(/after a hidden span|hides part of the body/);
  }, 30_000);

  test(`a hidden span longer than the notary's proxy.max_hidden_span (${MAX_HIDDEN}) is refused; one within it is signed`, async () => {
    const long = `Bearer ${"x".repeat(100)}`;
    const session = await epochSession(honestParts(long));
    const [span] = session.hiddenSpans;
    expect(refusal(await session.attest())).toEqual({
      status: 422,
      code: "request_unproven",
      message: `request refused: the hidden span at bytes ${span!.start}..${span!.end} is ${long.length} bytes long; at most ${MAX_HIDDEN} may be hidden in one span`,
    });
    expect((await (await epochSession(honestParts(`Bearer ${"x".repeat(MAX_HIDDEN - 7)}`))).attest()).status).toBe(200);
  }, 30_000);
});

describe("a Host naming another port than the one the notary dialled", () => {
  test("in TLS 1.3 epochs: refused, with or without a port, in any case, with a trailing dot", async () => {
    const port = targets.tls13.port;
    for (const named of [`${TARGET_HOST}:${port + 1}`, TARGET_HOST, `${TARGET_HOST.toUpperCase()}.:443`]) {
      const session = await epochSession([shown(`GET /a HTTP/1.1\r\nHost: ${named}\r\nConnection: close\r\nAuthorization: `), hidden(CREDENTIAL), shown("\r\n\r\n")]);
      expect({ named, refused: refusal(await session.attest()) }).toEqual({
        named,
        refused: { status: 400, code: "invalid_body", message: expect.stringContaining(`not port ${port}, the one the notary dialled`) },
      });
    }
    // The same name in another case and with its trailing dot, on the dialled port: signed.
    const right = await epochSession([shown(`GET /a HTTP/1.1\r\nHost: ${TARGET_HOST.toUpperCase()}.:${port}\r\nConnection: close\r\nAuthorization: `), hidden(CREDENTIAL), shown("\r\n\r\n")]);
    expect((await right.attest()).status).toBe(200);
  }, 60_000);

  test("in TLS 1.2, the request revealed by its master secret: refused", async () => {
    const session = await openMaliciousSession(options(targets.tls12.port));
    session.send(`GET /data HTTP/1.1\r\nHost: ${TARGET_HOST}:${targets.tls12.port + 1}\r\nConnection: close\r\n\r\n`);
    await session.relayClosed;
    expect(refusal(await session.attest({ revealRequest: true, redactions: [] }))).toMatchObject({ status: 400, code: "invalid_body", message: expect.stringContaining(`not port ${targets.tls12.port}`) });
  }, 30_000);
});

describe("TLS 1.2: the request revealed by its master secret", () => {
  const get = `GET /data HTTP/1.1\r\nHost: ${TARGET_HOST}:PORT\r\nAuthorization: ${CREDENTIAL}\r\nConnection: close\r\n\r\n`;

  async function tls12Session() {
    const session = await openMaliciousSession(options(targets.tls12.port));
    session.send(get.replace("PORT", String(targets.tls12.port)));
    await session.relayClosed;
    return session;
  }

  test("the true master secret: signed, the request revealed less what the prover declares hidden", async () => {
    const session = await tls12Session();
    const request = get.replace("PORT", String(targets.tls12.port));
    const start = request.indexOf(CREDENTIAL);
    const redactions = [{ pattern: "req:header:authorization", matched: true, spans: [{ direction: "sent" as const, start, end: start + CREDENTIAL.length }] }];
    const answer = await session.attest({ revealRequest: true, redactions });
    expect(answer.status).toBe(200);
    const proof = answer.body as unknown as Proof;
    expect(proof.body).toMatchObject({ request: "revealed", tlsVersion: "TLS1.2" });
    expect(JSON.stringify(proof)).not.toContain(CREDENTIAL.slice(7));
  }, 30_000);

  test("a master secret that does not match the session (a byte changed, another session's) is refused; so are both key forms at once", async () => {
    const masterOf = (keys: RevealedKeys): string => (keys.version === "TLS1.2" && keys.masterSecret) || "";
    const other = masterOf((await tls12Session()).honestKeys(true));
    const changed = await tls12Session();
    const fromOther = await tls12Session();
    for (const [session, masterSecret] of [[changed, flipHex(masterOf(changed.honestKeys(true)))], [fromOther, other]] as const) {
      const refused = refusal(await session.attest({ keys: { version: "TLS1.2", masterSecret } }));
      expect(refused).toMatchObject({ status: 422, code: "transcript_invalid" });
      expect(refused.message).toMatch(/protected record 0 does not authenticate under the revealed server write key/);
    }
    const both = await tls12Session();
    expect(refusal(await both.attest({ keys: { ...both.honestKeys(false), ...both.honestKeys(true) } }))).toEqual({
      status: 422,
      code: "transcript_invalid",
      message: "the revealed TLS 1.2 keys are either the master secret or the server write key and IV, not both",
    });
  }, 30_000);
});
