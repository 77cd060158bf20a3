import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Proof } from "../../src/proof/format.ts";
import type { VerifiedProofJson } from "../../src/proof/render.ts";
import { type KeyedNotary, proxyToLocalTargets, startKeyedNotary } from "../../testkit/notary.ts";
import { tlsFixture } from "../../testkit/env.ts";
import { type MaliciousSession, type NotaryAnswer, openMaliciousSession } from "../../testkit/malicious-prover.ts";
import { verifyWithCli } from "../../testkit/prove.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../testkit/scripted-target.ts";
import { type VersionedTarget, startVersionedTarget } from "../../testkit/target.ts";
import { type TcpProxy, startTcpProxy } from "../../testkit/tcp-proxy.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

/**
 * A standalone `cli notary start` offering proxy mode, driven by a prover that speaks its wire protocol itself
 * (testkit/malicious-prover.ts) against real local TLS servers: the notary signs one complete HTTP/1.1 answer to
 * one request, dated by its relay, or refuses with a reason; nothing the honest prover checks protects it here.
 */
const KEY = "malicious-prover-test-key-7c1f";
/** The notary's proxy.attestation_window, seconds. */
const WINDOW_S = 3;
const TRANSFERS = '{"transfers":[{"to":"bob","amount":5';
const TRANSFERS_REST = '00}]}';

const tls = tlsFixture();
let notary: KeyedNotary;
/** A hop between the notary and bun.tls13 that can change a byte of what the target sends. */
let forger: TcpProxy;
const bun: Record<string, VersionedTarget> = {};
const scripted: Record<string, ScriptedTarget> = {};

/** An answer of Content-Length framing whose last part waits until the test releases it. */
const heldLengthAnswer = (extraHeaders = "") => async ({ socket, released }: { socket: import("node:tls").TLSSocket; released: Promise<void> }) => {
  const body = TRANSFERS + TRANSFERS_REST;
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${extraHeaders}\r\n${TRANSFERS}`);
  await released;
  socket.end(TRANSFERS_REST);
};

/** Resolves when the scripted targets' latest connection has closed (set anew by each connection). */
let targetClosed: Promise<void> = Promise.resolve();

/**
 * The same answer framed by the connection's end: no Content-Length, the server closes after its last part, with
 * its close_notify (`end`) or with its TCP FIN alone (`fin`).
 */
const heldCloseAnswer = (how: "end" | "fin") => async ({ socket, released }: { socket: import("node:tls").TLSSocket; released: Promise<void> }) => {
  targetClosed = new Promise((resolve) => socket.once("close", () => resolve()));
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${TRANSFERS}`);
  await released;
  if (how === "end") socket.end(TRANSFERS_REST);
  else socket.write(TRANSFERS_REST, () => socket.destroy());
};

beforeAll(async () => {
  bun.tls13 = await startVersionedTarget(tls, "TLSv1.3");
  scripted.cut13 = await startScriptedTarget(tls, { version: "TLSv1.3" }, heldLengthAnswer());
  scripted.cut12 = await startScriptedTarget(tls, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, heldLengthAnswer());
  scripted.cutChacha = await startScriptedTarget(tls, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-CHACHA20-POLY1305" }, heldLengthAnswer());
  scripted.close13 = await startScriptedTarget(tls, { version: "TLSv1.3" }, heldCloseAnswer("end"));
  scripted.close12 = await startScriptedTarget(tls, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, heldCloseAnswer("end"));
  scripted.fin12 = await startScriptedTarget(tls, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, heldCloseAnswer("fin"));
  scripted.h2 = await startScriptedTarget(tls, { version: "TLSv1.3", alpn: ["h2", "http/1.1"] }, ({ socket }) => {
    socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  forger = await startTcpProxy({ host: "127.0.0.1", port: bun.tls13.port });
  const ports = [...Object.values(bun), ...Object.values(scripted), forger].map((target) => target.port);
  notary = await startKeyedNotary(KEY, [
    "host: 127.0.0.1",
    "port: 0",
    "notarization:",
    "  max_sent_data: 1024",
    "  max_recv_data: 2048",
    "  private_key_path: notary.key",
    ...proxyToLocalTargets(ports),
    `  attestation_window: ${WINDOW_S}`,
  ]);
}, 120_000);

afterAll(async () => {
  notary?.notary.process.kill("SIGKILL");
  await forger?.close();
  for (const target of [...Object.values(bun), ...Object.values(scripted)]) target.stop();
});

/** A session to the target on `port`: what it sends names that port in its Host, as an honest client does. */
async function open(port: number, alpn?: string[]): Promise<MaliciousSession> {
  const session = await openMaliciousSession({ notaryUrl: notary.notary.url, apiKey: KEY, serverName: TARGET_HOST, port, caPem: tls.caPem, alpn });
  return { ...session, send: (text: string) => session.send(text.replaceAll(`Host: ${TARGET_HOST}\r\n`, `Host: ${TARGET_HOST}:${port}\r\n`)) };
}

const get = (path: string, headers: Record<string, string> = {}) =>
  `GET ${path} HTTP/1.1\r\n${Object.entries({ Host: TARGET_HOST, Connection: "close", ...headers }).map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n`;

/** The refusal's status, code and message, or the signed proof's absence of one. */
const refusal = (answer: NotaryAnswer) => ({ status: answer.status, code: answer.body.error?.code, message: answer.body.error?.message ?? "" });

/** An exchange the target ends itself: the request sent, the answer read to the relay's close. */
async function wholeExchange(session: MaliciousSession, request: string): Promise<void> {
  session.send(request);
  await session.relayClosed;
}

/** A session that asked a held target for /transfers and read the answer's first part. */
async function firstPart(target: ScriptedTarget): Promise<MaliciousSession> {
  const session = await open(target.port);
  session.send(get("/transfers"));
  await session.readUntil((text) => text.endsWith(TRANSFERS));
  return session;
}

/** The held target's whole answer, read to the target's close, and the notary's answer to its attestation. */
async function wholeAnswer(target: ScriptedTarget): Promise<NotaryAnswer> {
  const session = await firstPart(target);
  target.release();
  await session.relayClosed;
  return session.attest();
}

async function verified(proof: unknown, ...flags: string[]): Promise<VerifiedProofJson> {
  const result = await verifyWithCli(JSON.stringify(proof), notary.pubPath, ...flags);
  expect(result.stderr).toBe("");
  expect(result.exitCode).toBe(0);
  return JSON.parse(result.stdout) as VerifiedProofJson;
}

describe("an honest exchange through the malicious prover's own client", () => {
  test("is signed, with the port, the relay's times, the framing and a hidden request that verifiers must accept on purpose", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/data"));
    const answer = await session.attest();
    expect(answer.status).toBe(200);
    const proof = answer.body as unknown as Proof;
    expect(proof.body).toMatchObject({ mode: "proxy", serverPort: bun.tls13!.port, responseFraming: "content-length", request: "hidden" });
    expect(proof.body.connectionTime).toBeLessThanOrEqual(Math.floor(session.serverHelloSeenAt() / 1000));
    const report = await verified(proof, "--allow-hidden-request", "--mode", "proxy");
    expect(report.recv.text).toContain('"name":"alice"');
    const strict = await verifyWithCli(JSON.stringify(proof), notary.pubPath);
    expect(strict.exitCode).toBe(1);
    expect(strict.stderr).toContain("does not show the method, URL, Host or port");
  }, 30_000);
});

describe("a forger on the path between the notary and the target", () => {
  test("one byte of the answer changed on its way: the notary's own check on the records it relayed refuses, with the honest keys", async () => {
    // Where the answer lies in what the target sends: an untouched exchange through the same hop, signed (the hop
    // resets the notary's connection once the target closed: a reset after the answer loses nothing).
    const clean = await open(forger.port);
    await wholeExchange(clean, get("/data"));
    const cleanAnswer = await clean.attest();
    expect(cleanAnswer.body.error).toBeUndefined();
    expect(cleanAnswer.status).toBe(200);
    const sent = forger.recorded().at(-1)!.toClient.length;
    // 40 bytes before the end: inside the answer's record, before the close_notify's (24 bytes in TLS 1.3).
    forger.changeByteToClient(sent - 40);
    try {
      const forged = await open(forger.port);
      await wholeExchange(forged, get("/data"));
      expect(refusal(await forged.attest())).toEqual({
        status: 422,
        code: "transcript_invalid",
        message: expect.stringMatching(/^the server's protected record \d+ does not authenticate under the revealed server application traffic secret/),
      });
    } finally {
      forger.changeByteToClient();
    }
  }, 30_000);
});

describe("a cut-off answer", () => {
  test.each([
    ["cut13", "TLS 1.3"],
    ["cut12", "TLS 1.2, AES-GCM"],
    ["cutChacha", "TLS 1.2, ChaCha20-Poly1305"],
  ])("%s (%s): the relay closed after the first part is refused as incomplete; the whole answer is signed", async (name) => {
    const target = scripted[name]!;
    const cut = await firstPart(target);
    cut.closeRelay();
    expect(refusal(await cut.attest())).toEqual({
      status: 422,
      code: "answer_incomplete",
      message: `the answer is not one complete HTTP/1.1 answer: its body has ${TRANSFERS.length} of the ${TRANSFERS.length + TRANSFERS_REST.length} bytes its Content-Length says`,
    });
    target.release();
    // The same target's whole answer is signed: the refusal was the cut's doing.
    const signed = await wholeAnswer(target);
    expect(signed.status).toBe(200);
    expect((await verified(signed.body, "--allow-hidden-request")).recv.text).toEndWith(TRANSFERS + TRANSFERS_REST);
  }, 30_000);

  test("framed by the connection's end: the server closing once the prover closed the relay is no end of the server's own", async () => {
    const target = scripted.close12!;
    const cut = await firstPart(target);
    cut.closeRelay();
    // The target sees the relay's end and closes (close_notify, FIN) before its last part; the notary records that.
    await targetClosed;
    await Bun.sleep(300);
    expect(refusal(await cut.attest())).toEqual({
      status: 422,
      code: "answer_incomplete",
      message: "the answer is not one complete HTTP/1.1 answer: its body ends with the connection, but the server closed only after the prover had closed its side",
    });
    target.release();
  }, 30_000);

  test.each([
    ["close12", false, "the client sent an alert before the server closed"],
    ["close13", true, "the client sent an alert before the server closed"],
    ["close13", false, "the client's records are not all readable (TLS 1.3 with the request or a value of it hidden)"],
  ])("framed by the connection's end (%s, request revealed: %p): a close the client provoked with its close_notify is refused", async (name, revealRequest, why) => {
    const target = scripted[name]!;
    const cut = await firstPart(target);
    // The client's close_notify: the server answers with its own and closes, cutting its answer.
    cut.tls.end();
    await cut.relayClosed;
    expect(refusal(await cut.attest({ revealRequest }))).toEqual({
      status: 422,
      code: "answer_incomplete",
      message: `the answer is not one complete HTTP/1.1 answer: its body ends with the connection, but ${why}${why.startsWith("the client's") ? ", so nothing shows that the client did not ask the server to close" : ""}`,
    });
    target.release();
  }, 30_000);

  test.each(["close12", "fin12"])("framed by the connection's end, closed by the server itself (%s: close_notify, or its FIN alone): signed, as framed by close", async (name) => {
    const signed = await wholeAnswer(scripted[name]!);
    expect(signed.status).toBe(200);
    expect((signed.body as unknown as Proof).body.responseFraming).toBe("close");
  }, 30_000);
});

describe("more than one answer", () => {
  test("two pipelined GETs: their two answers are not one answer", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/data", { Connection: "keep-alive" }) + get("/echo"));
    expect(Buffer.from(session.received()).toString().split("HTTP/1.1 200").length).toBe(3);
    const hidden = refusal(await session.attest());
    expect(hidden).toMatchObject({ status: 422, code: "answer_not_single" });
    expect(hidden.message).toMatch(/^the answer is not one complete HTTP\/1\.1 answer: \d+ bytes follow its end$/);
  }, 30_000);

  test("two pipelined GETs with the request revealed: the request is not one request", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/data", { Connection: "keep-alive" }) + get("/echo"));
    const revealed = refusal(await session.attest({ revealRequest: true }));
    expect(revealed).toMatchObject({ status: 422, code: "answer_not_single" });
    expect(revealed.message).toContain("request refused: ");
    expect(revealed.message).toContain("bytes follow the request's end: a second, pipelined request would get a second answer");
  }, 30_000);

  test("HEAD then GET, lengths aligned so that the second answer reads as the first one's body", async () => {
    // The length of GET /big's answer, measured first; HEAD /big?bytes=<that> announces it as its Content-Length.
    const probe = await open(bun.tls13!.port);
    await wholeExchange(probe, get("/big?bytes=64"));
    const secondLength = probe.received().length;
    const desync = () => get(`/big?bytes=${secondLength}`, { Connection: "keep-alive" }).replace("GET", "HEAD") + get("/big?bytes=64");

    const revealed = await open(bun.tls13!.port);
    await wholeExchange(revealed, desync());
    expect(refusal(await revealed.attest({ revealRequest: true }))).toMatchObject({ status: 422, code: "answer_not_single" });

    // With the request hidden the notary cannot tell a HEAD from a GET: it signs one well-framed answer, and the
    // proof says its request is hidden, which no verifier accepts unless told to.
    const hidden = await open(bun.tls13!.port);
    await wholeExchange(hidden, desync());
    const signed = await hidden.attest();
    expect(signed.status).toBe(200);
    expect((signed.body as unknown as Proof).body.request).toBe("hidden");
    const strict = await verifyWithCli(JSON.stringify(signed.body), notary.pubPath);
    expect(strict.exitCode).toBe(1);
    expect(strict.stderr).toContain("the proof's request is hidden");
  }, 30_000);
});

describe("a revealed request must name the verified server", () => {
  test("a Host naming another site under the target's certificate is refused", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/data", { Host: "evil.example" }));
    expect(refusal(await session.attest({ revealRequest: true }))).toEqual({
      status: 400,
      code: "invalid_body",
      message: `request refused: the request's Host header names "evil.example", not the verified server ${TARGET_HOST}`,
    });
  }, 30_000);

  test("a request whose Host value or method is declared hidden is refused", async () => {
    const request = get("/data");
    const span = (text: string) => {
      const start = Buffer.from(request).indexOf(text);
      return { direction: "sent" as const, start, end: start + text.length };
    };
    for (const [hidden, reason] of [
      [TARGET_HOST, "request refused: the request's Host header value is hidden"],
      ["GET", "request refused: the request line's method and the start of its target must be revealed (an origin-form target, /…)"],
    ] as const) {
      const session = await open(bun.tls13!.port);
      await wholeExchange(session, request);
      const redactions = [{ pattern: "req:header:x", matched: true, spans: [span(hidden)] }];
      expect(refusal(await session.attest({ revealRequest: true, redactions }))).toEqual({ status: 400, code: "invalid_body", message: reason });
    }
  }, 30_000);
});

describe("what the answer is and how it was carried", () => {
  test("an answer with Content-Encoding is refused", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/gzip"));
    expect(refusal(await session.attest())).toEqual({
      status: 422,
      code: "answer_encoded",
      message: "the answer is not one complete HTTP/1.1 answer: it is encoded (gzip), so it cannot be redacted",
    });
  }, 30_000);

  test("a server that chose HTTP/2 by ALPN is refused, though the bytes read as HTTP/1.1", async () => {
    const session = await open(scripted.h2!.port, ["h2", "http/1.1"]);
    expect(session.tls.alpnProtocol).toBe("h2");
    await wholeExchange(session, get("/"));
    expect(refusal(await session.attest())).toEqual({
      status: 422,
      code: "alpn_refused",
      message: 'the server chose the application protocol "h2" by ALPN; a notary signs HTTP/1.1 answers only',
    });
  }, 30_000);
});

describe("times", () => {
  test("asked for late, the attestation is refused: no fetching now and choosing later", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/data"));
    await Bun.sleep(WINDOW_S * 1000 + 1500);
    const refused = refusal(await session.attest());
    expect(refused).toMatchObject({ status: 422, code: "attestation_late" });
    expect(refused.message).toMatch(new RegExp(`^the attestation was asked for \\d+\\.\\d s after the relay ended; this notary signs only within ${WINDOW_S} s of it$`));
  }, 30_000);

  test("asked for a while after the fetch, the proof is dated by the relay, not by the attestation", async () => {
    const session = await open(bun.tls13!.port);
    await wholeExchange(session, get("/data"));
    const helloSecond = Math.floor(session.serverHelloSeenAt() / 1000);
    // Over a second later, within the notary's window.
    await Bun.sleep(1200);
    const askedSecond = Math.floor(Date.now() / 1000);
    const answer = await session.attest();
    expect(answer.status).toBe(200);
    const { body } = answer.body as unknown as Proof;
    expect(body.connectionTime).toBeLessThanOrEqual(helloSecond);
    expect(body.connectionTime).toBeLessThan(askedSecond);
    expect(body.responseTime!).toBeGreaterThanOrEqual(body.connectionTime);
    expect(body.responseTime!).toBeLessThan(askedSecond);
    const report = await verified(answer.body, "--allow-hidden-request");
    expect(report.responseTime?.unix).toBe(body.responseTime!);
    expect(report.evm).not.toBeNull();
  }, 30_000);
});
