import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TlsproofError, prove, redact, verifyProof } from "../../../src/client/index.ts";
import type { VerifiedProofJson } from "../../../src/proof/render.ts";
import { HIDDEN_BYTE_MARKER } from "../../../src/proof/verify.ts";
import { tlsFixture } from "../../../testkit/env.ts";
import { verifyWithCli } from "../../../testkit/prove.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../../testkit/prover.ts";
import { type ProofData, errorData, openStream, proofData } from "../../../testkit/sse.ts";
import { SECRET_VALUE, type VersionedTarget, startVersionedTarget } from "../../../testkit/target.ts";
import { TARGET_HOST, rsaIdentity } from "../../../testkit/tls-fixture.ts";
import { sample, scrapeMetrics } from "../../../testkit/metrics.ts";
import type { PromMetrics } from "prom2javascript";
import { eventually } from "../../../testkit/wait.ts";
import { processTree } from "../../../testkit/process.ts";
import { type TcpProxy, startTcpProxy } from "../../../testkit/tcp-proxy.ts";
import { type ScriptedTarget, startScriptedTarget } from "../../../testkit/scripted-target.ts";
import { type RawServer, startRawTls13Server } from "../../../testkit/raw-tls13-server.ts";

/**
 * Proxy mode end to end, through `cli prover start` with its embedded notary (which offers proxy mode under
 * the prover's own target policy): real TLS 1.3-only and TLS 1.2-only local targets, proofs checked by
 * `cli verify`.
 */
let prover: RunningProver;
const targets: Record<string, VersionedTarget> = {};
/** A TCP hop in front of the TLS 1.3 target, where bytes the server sends can be changed on their way. */
let forger: TcpProxy;
/** PROVER_RESOLVE for every target and the forger's hop. */
let resolveAll: string;
/** A TLS 1.3 target whose answer has no Content-Length: it ends when the server closes the connection. */
let closing: ScriptedTarget;
/** A TLS 1.3 target whose answers (HINTING_ANSWERS, by path) hold interim heads or statuses a response cannot carry. */
let hinting: ScriptedTarget;
const HINTING_ANSWERS: Record<string, string> = {
  "/hints": "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nX-Final: yes\r\nContent-Length: 2\r\n\r\nok",
  "/hints-only": "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
  "/status-600": "HTTP/1.1 600 Beyond\r\nContent-Length: 2\r\n\r\nok",
  "/switching": "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
  // UTF-8 in a value, as servers send file names (the script writes its text as UTF-8: e2 82 ac for the euro sign).
  "/utf8-field": 'HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename="€ café.txt"\r\nContent-Length: 2\r\n\r\nok',
  "/spaced-name": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX Bad: v\r\n\r\nok",
  // A 404 dressed as the prover's: its marks (a proof id, a mode, a session class) and its error shape.
  "/forged-marks": `HTTP/1.1 404 Not Found\r\nT-Proof-Id: ${"0".repeat(8)}-0000-4000-8000-${"0".repeat(12)}\r\nT-Proof-Mode: mpc\r\nT-Session-Class: forged\r\nContent-Type: application/json\r\nContent-Length: 56\r\n\r\n{"error":{"code":"notary_untrusted","message":"forged"}}`,
};
/** TLS 1.3 targets that refuse the client's KeyUpdate: with an alert, or by closing. */
const refusing: Partial<Record<"alert" | "close", RawServer>> = {};

// Every target presents the TARGET_HOST certificate, on its own port.
const urlOf = (name: string, path: string) => `https://${TARGET_HOST}:${targets[name]!.port}${path}`;

beforeAll(async () => {
  const tls = tlsFixture();
  targets.tls13 = await startVersionedTarget(tls, "TLSv1.3");
  targets.tls12 = await startVersionedTarget(tls, "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256");
  targets.chacha = await startVersionedTarget(tls, "TLSv1.2", "ECDHE-ECDSA-CHACHA20-POLY1305");
  // An RSA certificate: RSA-PSS signatures in TLS 1.3, PKCS#1 ones over ECDHE in TLS 1.2.
  targets.rsa13 = await startVersionedTarget(rsaIdentity(tls), "TLSv1.3");
  targets.rsa12 = await startVersionedTarget(rsaIdentity(tls), "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256");
  // A TLS 1.2 target no other test calls: what the prover learns of it is this file's to watch.
  targets.tls12Fresh = await startVersionedTarget(tls, "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256");
  forger = await startTcpProxy({ host: "127.0.0.1", port: targets.tls13.port });
  closing = await startScriptedTarget(tls, { version: "TLSv1.3" }, ({ socket }) => {
    socket.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"price":42}');
  });
  hinting = await startScriptedTarget(tls, { version: "TLSv1.3" }, ({ socket, request }) => {
    const path = request.slice(request.indexOf(" ") + 1, request.indexOf(" HTTP/"));
    socket.end(HINTING_ANSWERS[path] ?? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  });
  const ok = () => new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  for (const how of ["alert", "close"] as const) refusing[how] = await startRawTls13Server(tls, { onClientKeyUpdate: how, answer: ok });
  const rawPorts = Object.values(refusing).map((server) => server.port);
  resolveAll = [...Object.values(targets).map((t) => t.port), forger.port, closing.port, hinting.port, ...rawPorts].map((port) => `${TARGET_HOST}:${port}:127.0.0.1`).join(",");
  prover = await startProver(SOURCE_CLI, targets.tls13.port, { PROVER_RESOLVE: resolveAll });
}, 120_000);

afterAll(async () => {
  await prover?.stop();
  for (const target of Object.values(targets)) target.stop();
  await forger?.close();
  closing?.stop();
  hinting?.stop();
  for (const server of Object.values(refusing)) await server.stop();
});

interface ProxyProof {
  status: number;
  answer: string;
  headers: Headers;
  proof?: ProofData;
}

/** The proof stream opened first, then /proxy in proxy mode, then the proof event. */
async function proveProxy(url: string, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<ProxyProof> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
  const response = await fetch(`${prover.url}/proxy`, {
    ...init,
    headers: { "T-PROXY-URL": url, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy", ...headers },
  });
  const answer = await response.text();
  if (response.status !== 200) return { status: response.status, answer, headers: response.headers };
  const [event] = await stream.events;
  return { status: response.status, answer, headers: response.headers, proof: proofData(event!) };
}

/** `cli verify`, accepting a hidden request (proxy mode without T-PROXY-REVEAL hides it; the report says so). */
/** /proxy in proxy mode, then the proof stream's error event (or its proof). */
async function proveProxyOutcome(url: string, headers: Record<string, string> = {}): Promise<{ status: number; answer: string; error?: { code: string; message: string } }> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
  const response = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy", ...headers } });
  const answer = await response.text();
  const [event] = await stream.events;
  return { status: response.status, answer, error: event!.event === "error" ? errorData(event!) : undefined };
}

async function verified(proof: ProofData): Promise<VerifiedProofJson> {
  const result = await verifyWithCli(proof.proofText, prover.notaryPubPath, "--allow-hidden-request", "--mode", "proxy");
  expect(result.stderr).toBe("");
  expect(result.exitCode).toBe(0);
  return JSON.parse(result.stdout) as VerifiedProofJson;
}

describe("proxy mode proofs", () => {
  test.each([
    ["tls12", "TLS1.2"],
    ["chacha", "TLS1.2"],
    ["rsa12", "TLS1.2"],
  ])("%s target: the proof verifies, says proxy mode, hides the secret and, TLS 1.2 having no key updates, the whole request", async (name, version) => {
    const proved = await proveProxy(urlOf(name, "/data"), { "T-REDACTED": "res:body:secret" });
    expect(proved.status).toBe(200);
    expect(proved.headers.get("t-proof-mode")).toBe("proxy");
    expect(JSON.parse(proved.answer).secret).toBe(SECRET_VALUE); // the client gets the answer whole
    const report = await verified(proved.proof!);
    expect(report).toMatchObject({ mode: "proxy", tlsVersion: version, serverName: TARGET_HOST });
    expect(report.recv.text).toContain('"name":"alice"');
    expect(proved.proof!.proofText).not.toContain(SECRET_VALUE);
    // The request is hidden whole: its length only, no byte of it; the proof says so, and that its embedded notary signed it.
    expect(report).toMatchObject({ request: "hidden", requestLine: null, serverPort: targets[name]!.port, responseFraming: "content-length" });
    expect(report.notary.embedded).toBe(true);
    expect(report.sent.revealed).toEqual([]);
    expect(report.sent.length).toBeGreaterThan(0);
    expect(report.redactions.flatMap((r) => r.spans).every((span) => span.direction === "recv")).toBe(true);
    expect(proved.proof!.proofText).not.toContain(Buffer.from("GET /data").toString("base64").slice(0, 8));
  }, 60_000);

  test.each([
    ["tls13", "ECDSA"],
    ["rsa13", "RSA-PSS"],
  ])("%s target (%s): the request is proven by default, its request line and Host revealed", async (name) => {
    const proved = await proveProxy(urlOf(name, "/data?x=1"), { "T-REDACTED": "res:body:secret" });
    expect(proved.status).toBe(200);
    const report = await verified(proved.proof!);
    expect(report).toMatchObject({
      mode: "proxy",
      tlsVersion: "TLS1.3",
      request: "revealed",
      requestLine: "GET /data?x=1 HTTP/1.1",
      host: `${TARGET_HOST}:${targets[name]!.port}`,
      serverPort: targets[name]!.port,
    });
    expect(report.sent.hiddenBytes).toBe(0);
    expect(proved.proof!.proofText).not.toContain(SECRET_VALUE);
    // Without --allow-hidden-request, and checked against the URL asked for.
    const strict = await verifyWithCli(proved.proof!.proofText, prover.notaryPubPath, "--mode", "proxy", "--method", "GET", "--url", urlOf(name, "/data?x=1"));
    expect(strict.exitCode).toBe(0);
    const other = await verifyWithCli(proved.proof!.proofText, prover.notaryPubPath, "--url", urlOf(name, "/data?x=2"));
    expect(other.exitCode).toBe(1);
    expect(other.stderr).toContain("differs from the expected");
  }, 60_000);
});

describe("a TLS 1.2 target", () => {
  test("is found by our TLS 1.3 client's refused hello, proven over node:tls on a new relay, and then dialled so at once", async () => {
    /** The prover's log lines of one proof, once the one saying the target answered has come (the log is read as it comes). */
    const proveLogged = async () => {
      const requestId = crypto.randomUUID();
      const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
      const response = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": urlOf("tls12Fresh", "/data"), "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" } });
      expect(response.status).toBe(200);
      expect(proofData((await stream.events)[0]!).proofText).toContain('"tlsVersion":"TLS1.2"');
      const lines = () => prover.log().split("\n").filter((line) => line.includes(requestId));
      return eventually(lines, (found) => found.some((line) => line.includes("target answered")), 10_000);
    };
    const speaksTls12 = (lines: string[]) => lines.filter((line) => line.includes("the target speaks TLS 1.2: proving over node:tls on a new relay"));
    expect(speaksTls12(await proveLogged())).toHaveLength(1);
    // Logged before the answer, when it happens: the second call went to node:tls at once.
    expect(speaksTls12(await proveLogged())).toEqual([]);
  }, 60_000);
});

describe("a fully qualified URL (its host ends in a dot)", () => {
  const dotted = (name: string, path: string) => urlOf(name, path).replace(`://${TARGET_HOST}:`, `://${TARGET_HOST}.:`);

  test("is proven for the host without the dot: SNI, certificate, Host and the proof's server name; verifiers take either spelling", async () => {
    const url = dotted("tls13", "/echo?user=42");
    const result = await prove({ prover: prover.url, notaryKeys: [prover.notaryPubPem], mode: "proxy", url, timeoutMs: 30_000, allowTestTrustAnchor: true });
    const host = `${TARGET_HOST}:${targets.tls13!.port}`;
    expect(JSON.parse(result.response.text()).headers.host).toBe(host);
    expect(result.verified.body).toMatchObject({ serverName: TARGET_HOST, request: "revealed" });
    expect(result.verified.sent.text).toContain(`\r\nhost: ${host}\r\n`);
    expect(verifyProof(result.proofText, prover.notaryPubPem, { url, serverName: `${TARGET_HOST}.`, allowTestTrustAnchor: true }).body.serverName).toBe(TARGET_HOST);
    expect(verifyProof(result.proofText, prover.notaryPubPem, { url: urlOf("tls13", "/echo?user=42"), serverName: TARGET_HOST, allowTestTrustAnchor: true }).body.serverName).toBe(TARGET_HOST);
    const report = await verifyWithCli(result.proofText, prover.notaryPubPath, "--server-name", `${TARGET_HOST}.`, "--url", url);
    expect([report.exitCode, report.stderr]).toEqual([0, ""]);
  }, 60_000);

  test("on a TLS 1.2 target too (node:tls names the server), and through cli prove", async () => {
    const proved = await proveProxy(dotted("tls12", "/data"));
    expect(proved.status).toBe(200);
    expect(await verified(proved.proof!)).toMatchObject({ mode: "proxy", tlsVersion: "TLS1.2", serverName: TARGET_HOST });
    const out = join(prover.dataDir, `dotted-${crypto.randomUUID()}.json`);
    const cli = await runCli(SOURCE_CLI, ["prove", "--allow-test-anchor", "--prover", prover.url, "--notary-pub-key", prover.notaryPubPath, "--mode", "proxy", "--url", dotted("tls13", "/data"), "--out", out]);
    expect([cli.exitCode, cli.stderr]).toEqual([0, ""]);
    expect(JSON.parse(readFileSync(out, "utf8")).body.serverName).toBe(TARGET_HOST);
  }, 60_000);
});

describe("proxy mode on TLS 1.3: the request's secrets kept from the notary (epochs)", () => {
  test("Authorization (hidden by default) and a req:header entry are hidden epochs; the target got them; the proof shows neither, nor the answer's echo", async () => {
    const token = "Bearer epoch-credential-4Fq9x";
    const apiKey = "k3y-epoch-value-77";
    const proved = await proveProxy(urlOf("tls13", "/echo?user=42"), { "T-REDACTED": "req:header:x-api-key", authorization: token, "x-api-key": apiKey });
    expect(proved.status).toBe(200);
    const echoed = JSON.parse(proved.answer).headers;
    expect([echoed.authorization, echoed["x-api-key"]]).toEqual([token, apiKey]);
    const report = await verified(proved.proof!);
    expect(report.requestLine).toBe("GET /echo?user=42 HTTP/1.1");
    // Written last, after every revealed header, as one hidden block: the second header's name is in it.
    const block = `${token}\r\nx-api-key: ${apiKey}`;
    expect(report.sent.text).toEndWith(`\r\nconnection: close\r\nauthorization: ${"█".repeat(block.length)}\r\n\r\n`);
    expect(report.redactions.map((r) => r.pattern)).toEqual(["req:header:x-api-key", "default:req:header:authorization", "echo:*", "req:hidden-header-block"]);
    for (const secret of [token.slice(7), apiKey]) {
      expect(proved.proof!.proofText).not.toContain(secret);
      expect(proved.proof!.proofText).not.toContain(Buffer.from(secret).toString("base64").slice(0, 12));
    }
  }, 60_000);

  test("prove() with the default: the request line and Host checked against the call; on TLS 1.2 a hidden request is refused unless accepted, and reveal: request proves it", async () => {
    const common = { prover: prover.url, notaryKeys: [prover.notaryPubPem], allowTestTrustAnchor: true, mode: "proxy" as const, headers: { authorization: "Bearer prove-default-9Zk" }, timeoutMs: 30_000 };
    const result = await prove({ ...common, url: urlOf("tls13", "/data?user=42"), redact: [redact.responseBody("secret")] });
    expect(result.mode).toBe("proxy");
    expect(result.verified.sent.text).toStartWith("GET /data?user=42 HTTP/1.1\r\n");
    expect(result.proofText).not.toContain("prove-default-9Zk");
    expect(result.proofText).not.toContain(SECRET_VALUE);

    const hidden = await prove({ ...common, url: urlOf("tls12", "/data") }).catch((error: unknown) => error);
    expect(hidden).toMatchObject({ code: "proof_mismatch", message: expect.stringContaining("pass allowHiddenRequest: true") });
    const accepted = await prove({ ...common, url: urlOf("tls12", "/data"), allowHiddenRequest: true });
    expect(accepted.verified.body.request).toBe("hidden");

    // TLS 1.2 with the master secret: the notary reads the request whole and leaves the credential out of the proof.
    const revealed = await prove({ ...common, url: urlOf("tls12", "/data?user=42"), reveal: "request" });
    expect(revealed.verified.body).toMatchObject({ request: "revealed", tlsVersion: "TLS1.2" });
    expect(revealed.verified.sent.text).toStartWith("GET /data?user=42 HTTP/1.1\r\n");
    expect(revealed.verified.sent.text).toContain("authorization: ███");
    expect(revealed.proofText).not.toContain("prove-default-9Zk");
    const verifiedProof = verifyProof(revealed.proofText, prover.notaryPubPem, { method: "GET", url: urlOf("tls12", "/data?user=42"), allowTestTrustAnchor: true });
    expect(verifiedProof.body.mode).toBe("proxy");
  }, 60_000);

  test("T-PROXY-REVEAL: none on TLS 1.3 keeps the request hidden whole: the proof says so", async () => {
    const proved = await proveProxy(urlOf("tls13", "/data"), { "T-PROXY-REVEAL": "none", authorization: "Bearer none-hidden-3Qp" });
    expect(proved.status).toBe(200);
    const report = await verified(proved.proof!);
    expect(report).toMatchObject({ request: "hidden", tlsVersion: "TLS1.3", requestLine: null });
    expect(report.sent.revealed).toEqual([]);
  }, 60_000);

  test("values the epochs cannot hide are refused before anything is sent: a query value (named, or hidden by default), one longer than PROVER_PROXY_MAX_HIDDEN_SPAN", async () => {
    const refuse = async (url: string, headers: Record<string, string>) => {
      const response = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url, "T-REQUEST-ID": crypto.randomUUID(), "T-PROOF-MODE": "proxy", ...headers } });
      return { status: response.status, ...((await response.json()) as { error: { code: string; message: string } }).error };
    };
    const query = await refuse(urlOf("tls13", "/data?user=s3cret"), { "T-REDACTED": "res:query:user" });
    expect(query).toMatchObject({ status: 400, code: "invalid_redaction", message: expect.stringContaining("hides bytes before the end of its Host header") });
    // A parameter whose name says it holds a secret, with no T-REDACTED: hidden by default, so refused, never revealed.
    const secret = await refuse(urlOf("tls13", "/data?api_key=s3cret-k3y"), {});
    expect([secret.status, secret.code]).toEqual([400, "invalid_redaction"]);
    expect(secret.message).toContain('query parameter "api_key" looks like a secret');
    expect(secret.message).toContain("reveal:res:query:api_key");
    expect(secret.message).toContain("T-PROXY-REVEAL: none");
    expect(secret.message).not.toContain("s3cret-k3y");
    const long = await refuse(urlOf("tls13", "/data"), { authorization: `Bearer ${"x".repeat(5000)}` });
    expect(long).toMatchObject({ status: 400, code: "invalid_redaction", message: expect.stringContaining("the request hides 5007 bytes in one value; proxy mode hides at most 4096") });
  }, 30_000);
});

describe("proxy mode with the request revealed (T-PROXY-REVEAL: request)", () => {
  test("the request enters the proof, less its req:header:authorization value, echoed or not", async () => {
    const token = "Bearer proxy-mode-credential-7Qx";
    const proved = await proveProxy(urlOf("tls13", "/echo?q=1"), {
      "T-PROXY-REVEAL": "request",
      "T-REDACTED": "req:header:authorization",
      authorization: token,
    });
    expect(proved.status).toBe(200);
    expect(JSON.parse(proved.answer).headers.authorization).toBe(token); // the target got it
    const report = await verified(proved.proof!);
    expect(report.mode).toBe("proxy");
    expect(report.sent.text).toStartWith("GET /echo?q=1 HTTP/1.1\r\n");
    expect(report.sent.text).toContain("authorization: █");
    expect(report.redactions.map((r) => r.pattern)).toEqual(["req:header:authorization", "echo:*"]);
    // Neither the request's header nor the answer's echo of it shows the credential.
    expect(proved.proof!.proofText).not.toContain("proxy-mode-credential-7Qx");
    expect(report.recv.text).not.toContain("proxy-mode-credential-7Qx");
  }, 60_000);
});

describe("proxy mode answers", () => {
  test("a chunked answer is de-chunked for the client; its secret, split across chunks, is hidden", async () => {
    const proved = await proveProxy(urlOf("tls12", "/chunked"), { "T-REDACTED": "res:body:secret" });
    expect(proved.status).toBe(200);
    expect(JSON.parse(proved.answer).secret).toBe(SECRET_VALUE);
    const report = await verified(proved.proof!);
    expect(report.recv.text.toLowerCase()).toContain("transfer-encoding: chunked");
    // The secret really was split across two chunks: each piece hidden, the chunk framing between them visible.
    const hidden = (value: string) => HIDDEN_BYTE_MARKER.repeat(Buffer.byteLength(value));
    const [firstPiece, secondPiece] = [SECRET_VALUE.slice(0, 4), SECRET_VALUE.slice(4)];
    expect(report.recv.text).toMatch(new RegExp(`"secret":${hidden(`"${firstPiece}`)}\\r\\n[0-9a-fA-F]+\\r\\n${hidden(`${secondPiece}"`)},"items"`));
    expect(report.redactions.find((redaction) => redaction.pattern === "res:body:secret")?.spans).toHaveLength(2);
    expect(proved.proof!.proofText).not.toContain(SECRET_VALUE);
    expect(proved.proof!.proofText).not.toContain(SECRET_VALUE.slice(4));
  }, 60_000);

  test("a 1 MB answer is answered and proven whole", async () => {
    const bytes = 1_000_000;
    // An MPC session size announced beyond PROVER_MAX_RECV_DATA means nothing in proxy mode: no session is sized.
    const proved = await proveProxy(urlOf("tls13", `/big?bytes=${bytes}`), { "T-MAX-RECV-DATA": String(2 * bytes) });
    expect(proved.status).toBe(200);
    expect(proved.answer.length).toBe(bytes);
    const report = await verified(proved.proof!);
    expect(report.recv.length).toBeGreaterThan(bytes);
    expect(report.recv.hiddenBytes).toBe(0);
    expect(report.recv.text.endsWith("x".repeat(1000))).toBe(true);
  }, 60_000);

  test("metrics: the proof is timed as an answered proxy-mode call and counted as a proof; none runs after it", async () => {
    const answered = (families: PromMetrics) => sample(families, "tlsproof_proxy_duration_seconds", { mode: "proxy", result: "answered" }) ?? 0;
    const before = await scrapeMetrics(prover.url);
    const proved = await proveProxy(urlOf("tls13", "/data"));
    expect(proved.proof).toBeDefined();
    const after = await scrapeMetrics(prover.url);
    expect(answered(after)).toBe(answered(before) + 1);
    expect(sample(after, "tlsproof_proofs_total", { outcome: "proof" })).toBe((sample(before, "tlsproof_proofs_total", { outcome: "proof" }) ?? 0) + 1);
    // No MPC call was timed for it, and its proxy session ended with its proof.
    expect(sample(after, "tlsproof_proxy_duration_seconds", { mode: "mpc" })).toBeUndefined();
    // The slot is given back just after the proof is stored and delivered.
    const running = async () => sample(await scrapeMetrics(prover.url), "tlsproof_proxy_mode_sessions");
    expect(await eventually(running, (n) => n === 0, 10_000)).toBe(0);
  }, 60_000);
});

describe("a target that refuses the client's key update", () => {
  test.each(["alert", "close"] as const)("(%s): 502 target_key_update_refused on /proxy and on the proof stream, naming MPC mode; without a hidden value it is proven", async (how) => {
    const server = refusing[how]!;
    const url = `https://${TARGET_HOST}:${server.port}/account?user=42`;
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": url, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy", authorization: "Bearer refused-update-1Xw" },
    });
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect({ status: response.status, code: body.error.code }).toEqual({ status: 502, code: "target_key_update_refused" });
    expect(body.error.message).toMatch(how === "alert" ? /answered with TLS alert 10 \(unexpected_message\) after the client's TLS 1\.3 KeyUpdate/ : /closed the connection/);
    expect(body.error.message).toContain("Prove it in MPC mode (T-PROOF-MODE: mpc");
    expect(body.error.message).not.toContain("refused-update-1Xw");
    expect(errorData((await stream.events)[0]!)).toMatchObject({ requestId, code: "target_key_update_refused" });
    expect(server.clientKeyUpdates).toBeGreaterThan(0);
    // The same target proven with the request in one epoch: T-PROXY-REVEAL: request (or none) needs no key update.
    const whole = await proveProxy(url, { "T-PROXY-REVEAL": "request", authorization: "Bearer refused-update-1Xw" });
    expect(whole.status).toBe(200);
    expect((await verified(whole.proof!)).requestLine).toBe("GET /account?user=42 HTTP/1.1");
  }, 60_000);
});

describe("an answer framed by the connection's end, over TLS 1.3", () => {
  test("with the request hidden or a value of it: the client gets it, the proof stream says answer_incomplete and why; every epoch revealed, it is proven", async () => {
    const url = `https://${TARGET_HOST}:${closing.port}/`;
    for (const headers of [{ "T-PROXY-REVEAL": "none" }, { authorization: "Bearer closing-7Tz" }] as Record<string, string>[]) {
      const hidden = await proveProxyOutcome(url, headers);
      expect(hidden.status).toBe(200);
      expect(hidden.answer).toBe('{"price":42}');
      expect(hidden.error).toMatchObject({ code: "answer_incomplete" });
      expect(hidden.error!.message).toContain("the client's records are not all readable (TLS 1.3 with the request or a value of it hidden)");
    }
    for (const headers of [{}, { "T-PROXY-REVEAL": "request", authorization: "Bearer closing-7Tz" }] as Record<string, string>[]) {
      const revealed = await proveProxy(url, headers);
      expect(revealed.status).toBe(200);
      expect((await verified(revealed.proof!)).responseFraming).toBe("close");
    }
  }, 60_000);
});

describe("odd answer heads from a target: interim heads, statuses and fields a response cannot carry, the prover's own header names", () => {
  const url = (path: string) => `https://${TARGET_HOST}:${hinting.port}${path}`;

  test("103 Early Hints, then the answer: the client gets the answer's own status and fields; the proof stream says an interim answer is not proven", async () => {
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
    const response = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url("/hints"), "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" } });
    expect({ status: response.status, body: await response.text(), final: response.headers.get("x-final"), link: response.headers.get("link") }).toEqual({ status: 200, body: "ok", final: "yes", link: null });
    const [event] = await stream.events;
    expect(errorData(event!)).toMatchObject({ requestId, code: "answer_not_single", message: expect.stringContaining("it is an interim answer (status 103)") });
  }, 60_000);

  test("a target's headers named as the prover's own never pass: no proof id where none follows; prove() is not fooled by an answer shaped like a refusal", async () => {
    const response = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url("/forged-marks"), "T-REQUEST-ID": crypto.randomUUID(), "T-PROOF-MODE": "proxy" } });
    expect(await response.json()).toEqual({ error: { code: "notary_untrusted", message: "forged" } });
    expect({ status: response.status, id: response.headers.get("t-proof-id"), mode: response.headers.get("t-proof-mode"), sessionClass: response.headers.get("t-session-class") }).toEqual({
      status: 404,
      id: null,
      mode: "proxy",
      sessionClass: null,
    });
    const refused = await prove({ prover: prover.url, notaryKeys: [prover.notaryPubPem], allowTestTrustAnchor: true, mode: "proxy", url: url("/forged-marks"), timeoutMs: 30_000 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TlsproofError);
    expect({ code: (refused as TlsproofError).code, message: (refused as TlsproofError).message }).toEqual({
      code: "target_request_failed",
      message: "the target answered 404; no proof is made without proveFailed: true",
    });
  }, 60_000);

  test("a header value in UTF-8 reaches the client byte for byte, and the proof of it verifies", async () => {
    const proven = await proveProxy(url("/utf8-field"));
    expect(proven.status).toBe(200);
    // Header values travel as bytes, read one char per byte (a ByteString), as the target wrote them.
    expect(Buffer.from(proven.headers.get("content-disposition")!, "latin1").toString("utf8")).toBe('attachment; filename="€ café.txt"');
    expect((await verified(proven.proof!)).responseFraming).toBe("content-length");
  }, 60_000);

  test("an interim head and then the connection's end, a status past 599, 101, or a field no response can carry: a 502 saying so, on /proxy and on the proof stream", async () => {
    const expected: Record<string, string> = {
      "/hints-only": "the connection ended before the target's answer did",
      "/status-600": "the target answered with status 600, which cannot be passed on to the client (200-599)",
      "/switching": "the target answered with status 101, which cannot be passed on to the client (200-599)",
      "/spaced-name": "the target's answer has a header field (number 2 of its head) that no HTTP response can carry: its name is not a token, or its value holds NUL, CR or LF",
    };
    for (const [path, message] of Object.entries(expected)) {
      const requestId = crypto.randomUUID();
      const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
      const response = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": url(path), "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" } });
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect({ path, status: response.status, ...body.error }).toEqual({ path, status: 502, code: "target_request_failed", message });
      const [event] = await stream.events;
      expect(errorData(event!)).toMatchObject({ requestId, code: "target_request_failed", message });
    }
  }, 60_000);
});

describe("a forger on the path between the notary and the target", () => {
  test("one byte of the server's answer changed on its way: the client gets an error, the stream an error, and no proof is made", async () => {
    // Handshake and certificates come first (a few KB); byte 12000 of a 20 KB answer is inside its application data.
    forger.changeByteToClient(12_000);
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, 30_000);
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${forger.port}/big?bytes=20000`, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" },
    });
    const body = (await response.json()) as { error: { code: string; message: string } };
    const [event] = await stream.events;
    expect({ status: response.status, ...body.error }).toEqual({
      status: 502,
      code: "target_request_failed",
      message: "a TLS record of the target's answer failed its integrity check: it was changed on its way",
    });
    expect(errorData(event!)).toMatchObject({ requestId, code: "target_request_failed" });
    // The next connection through the same hop is left alone and proven: the refusal was the changed byte's doing.
    forger.changeByteToClient();
    const clean = await proveProxy(`https://${TARGET_HOST}:${forger.port}/big?bytes=20000`);
    expect(clean.status).toBe(200);
    expect((await verified(clean.proof!)).recv.length).toBeGreaterThan(20_000);
  }, 60_000);
});

describe("proxy mode refusals", () => {
  async function refusal(headers: Record<string, string>): Promise<{ status: number; code: string; message: string }> {
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": urlOf("tls13", "/data"), "T-REQUEST-ID": crypto.randomUUID(), ...headers },
    });
    const body = (await response.json()) as { error: { code: string; message: string } };
    return { status: response.status, ...body.error };
  }

  test("an unknown T-PROOF-MODE is a 400", async () => {
    expect(await refusal({ "T-PROOF-MODE": "fast" })).toMatchObject({ status: 400, code: "invalid_header", message: "T-PROOF-MODE must be mpc or proxy" });
  });

  test("T-PROXY-REVEAL outside proxy mode, or with another value, is a 400", async () => {
    expect(await refusal({ "T-PROXY-REVEAL": "request" })).toMatchObject({
      status: 400,
      code: "invalid_header",
      message: "T-PROXY-REVEAL applies to proxy mode only (T-PROOF-MODE: proxy)",
    });
    expect(await refusal({ "T-PROOF-MODE": "proxy", "T-PROXY-REVEAL": "everything" })).toMatchObject({ status: 400, code: "invalid_header" });
  });

  test("req:* patterns with T-PROXY-REVEAL: none are a 400 saying the request is hidden whole", async () => {
    const refused = await refusal({ "T-PROOF-MODE": "proxy", "T-PROXY-REVEAL": "none", "T-REDACTED": "res:body:secret,req:header:authorization" });
    expect(refused).toMatchObject({ status: 400, code: "invalid_redaction" });
    expect(refused.message).toContain("entry 2");
    expect(refused.message).toContain("hidden whole");
    expect(refused.message).toContain("leave T-PROXY-REVEAL out");
  });

  test("the notary resolves the target itself: an unknown host is its 502, passed on", async () => {
    const response = await fetch(`${prover.url}/proxy`, {
      headers: { "T-PROXY-URL": "https://no-such-host.invalid/x", "T-REQUEST-ID": crypto.randomUUID(), "T-PROOF-MODE": "proxy" },
    });
    const body = (await response.json()) as { error: { code: string } };
    expect({ status: response.status, code: body.error.code }).toEqual({ status: 502, code: "target_unresolvable" });
  }, 30_000);
});

describe("engine hosts", () => {
  test("a prover that has proven only in proxy mode runs none: no child process, none in /pool, the gauge at 0", async () => {
    expect((await proveProxy(urlOf("tls13", "/data"))).proof).toBeDefined();
    expect(processTree(prover.process.pid)).toEqual([prover.process.pid]);
    const pool = (await (await fetch(`${prover.url}/pool`)).json()) as { engineHosts: { hosts: unknown[] } };
    expect(pool.engineHosts.hosts).toEqual([]);
    expect(sample(await scrapeMetrics(prover.url), "tlsproof_engine_hosts")).toBe(0);
    expect(prover.log()).not.toContain("engine host started");
  }, 30_000);
});

describe("proxy mode's limits at the prover", () => {
  /** One proxy proof at a time, a target silent for 5 s is given up, answers up to 64 KiB. */
  let limited: RunningProver;
  beforeAll(async () => {
    limited = await startProver(SOURCE_CLI, targets.tls13!.port, {
      PROVER_RESOLVE: resolveAll,
      PROVER_ENGINE_HOSTS: "1",
      PROVER_PROXY_MAX_SESSIONS: "1",
      PROVER_RESPONSE_TIMEOUT: "5000ms",
      PROVER_PROXY_MAX_RECV_DATA: "65536",
    });
  }, 120_000);
  afterAll(async () => {
    await limited?.stop();
  });

  const call = (path: string, requestId: string) =>
    fetch(`${limited.url}/proxy`, { headers: { "T-PROXY-URL": urlOf("tls13", path), "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" } });
  const errorOf = async (response: Response) => ({ status: response.status, ...((await response.json()) as { error: { code: string; message: string } }).error });
  const running = async () => sample(await scrapeMetrics(limited.url), "tlsproof_proxy_mode_sessions");

  test("a target gone silent is 504 target_timeout; meanwhile PROVER_PROXY_MAX_SESSIONS refuses the next with 503, and its id stays usable", async () => {
    const [silentId, nextId] = [crypto.randomUUID(), crypto.randomUUID()];
    const [silentStream, nextStream] = await Promise.all([openStream(`${limited.url}/proof/${silentId}`, 60_000), openStream(`${limited.url}/proof/${nextId}`, 60_000)]);
    const silent = call("/slow?ms=60000", silentId);
    expect(await eventually(running, (n) => n === 1, 10_000)).toBe(1);
    const refused = await call("/data", nextId);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await errorOf(refused)).toEqual({ status: 503, code: "over_capacity", message: "the prover is running its maximum of 1 sessions" });
    expect(await errorOf(await silent)).toEqual({ status: 504, code: "target_timeout", message: "the target was silent for 5000 ms" });
    expect(errorData((await silentStream.events)[0]!)).toMatchObject({ requestId: silentId, code: "target_timeout" });
    // The refused call spent nothing: its id, tried again, gets its answer and its proof.
    expect(await eventually(running, (n) => n === 0, 10_000)).toBe(0);
    expect((await call("/data", nextId)).status).toBe(200);
    expect(proofData((await nextStream.events)[0]!).proofText).toContain('"mode":"proxy"');
  }, 60_000);

  test("an answer over PROVER_PROXY_MAX_RECV_DATA is 502 response_too_large, on /proxy and on its stream", async () => {
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${limited.url}/proof/${requestId}`, 30_000);
    const expected = { code: "response_too_large", message: "the answer exceeds 65536 bytes (PROVER_PROXY_MAX_RECV_DATA)" };
    expect(await errorOf(await call("/big?bytes=100000", requestId))).toEqual({ status: 502, ...expected });
    expect(errorData((await stream.events)[0]!)).toMatchObject({ requestId, ...expected });
  }, 30_000);
});
