import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { scratchDir, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { errorData, firstEvent, proofData } from "../../testkit/sse.ts";
import { SECRET_HEADER_VALUE, SECRET_VALUE, startTarget } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

const HIDDEN = "█";
const hidden = (value: string) => HIDDEN.repeat(Buffer.byteLength(value));

interface VerifiedJson {
  sent: { text: string; revealed: { data: string }[] };
  recv: { text: string; revealed: { data: string }[] };
  redactions: { pattern: string; matched: boolean; declaredBy: string; spans: { direction: string }[] }[];
  hiddenRanges: { direction: string; start: number; end: number; covers: { kind: string; name?: string; path?: string }; whole: boolean }[];
}

/**
 * Through a real `cli prover start`, each proof checked with `cli verify --json`: the answer's redactions in an MPC
 * session (the notary sees nothing in clear); the request's, echoes and credentials in proxy mode with the request
 * shown to the notary (T-PROXY-REVEAL: request), where a body may hold hidden values (the request rule,
 * src/proof/request-rule.ts, holds a request hidden from the notary to hidden headers last and a body hidden whole).
 */
describe("redaction end to end", () => {
  let target: Server<undefined>;
  let prover: RunningProver;

  beforeAll(async () => {
    target = startTarget(tlsFixture());
    prover = await startProver(SOURCE_CLI, target.port!);
  }, 120_000);
  afterAll(async () => {
    await prover?.stop();
    target?.stop(true);
  }, 120_000);

  /** Request redactions the notary shows the proof's bytes for: proxy mode, the request seen whole by the notary. */
  const REQUEST_SHOWN = { "T-PROOF-MODE": "proxy", "T-PROXY-REVEAL": "request" };

  test("MPC: header, body and search patterns hide exactly their values in the answer, also across chunks", async () => {
    const account = "acct-5521";
    const requestId = crypto.randomUUID();
    const patterns = ["res:header:x-secret-token", "res:body:secret", "search:alice", "res:body:no.such.key"];
    const response = await fetch(`${prover.url}/proxy`, {
      headers: {
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/chunked/${account}/info?view=1`,
        "T-REQUEST-ID": requestId,
        "T-REDACTED": patterns.join(","),
        // The last pattern matches nothing: this client accepts a proof that says so.
        "T-REDACTED-UNMATCHED": "allow",
      },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("t-proof-mode")).toBe("mpc");
    expect(((await response.json()) as { secret: string }).secret).toBe(SECRET_VALUE);

    const { proofText: data } = proofData(await firstEvent(`${prover.url}/proof/${requestId}`, 240_000));
    const proofPath = join(scratchDir("redaction-e2e"), "proof.json");
    writeFileSync(proofPath, data);
    const result = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", proofPath, "--json"]);
    expect(result.exitCode).toBe(0);
    const verified = JSON.parse(result.stdout) as VerifiedJson;
    const { sent, recv } = verified;

    // The request is revealed whole: nothing in it was asked hidden.
    expect(sent.text).toStartWith(`GET /chunked/${account}/info?view=1 HTTP/1.1\r\n`);
    expect(sent.text).not.toContain(HIDDEN);
    // Response: a header value, a body value split by a chunk boundary, and every "alice".
    expect(recv.text).toContain(`x-secret-token: ${hidden(SECRET_HEADER_VALUE)}\r\n`);
    expect(recv.text).toMatch(/transfer-encoding: chunked\r\n/i);
    expect(recv.text).not.toContain("alice");
    expect(recv.text).toContain(`"name":"${hidden("alice")}"`);
    // The secret is split across two chunks: its pieces are hidden, the chunk framing between them is not.
    const firstPiece = SECRET_VALUE.slice(0, 4);
    const secondPiece = SECRET_VALUE.slice(4);
    expect(recv.text).toMatch(new RegExp(`"secret":${hidden(`"${firstPiece}`)}\\r\\n[0-9a-fA-F]+\\r\\n${hidden(`${secondPiece}"`)},"items"`));

    const everything = [...sent.revealed, ...recv.revealed].map((r) => Buffer.from(r.data, "base64").toString()).join("|");
    for (const value of [SECRET_VALUE, SECRET_HEADER_VALUE, "alice", firstPiece + secondPiece]) {
      expect(everything).not.toContain(value);
      expect(data).not.toContain(value);
    }
    expect(verified.redactions.map((r) => [r.pattern, r.matched])).toEqual([
      ["res:header:x-secret-token", true],
      ["res:body:secret", true],
      ["search:*", true],
      ["res:body:no.such.key", false],
    ]);
    expect(verified.redactions[1]!.spans).toHaveLength(2); // the two pieces around the chunk boundary
  }, 300_000);

  test("MPC: a hidden query value or path segment, or a body after a hidden header, is refused before anything is sent", async () => {
    const refusal = async (path: string, headers: Record<string, string>, body?: string) => {
      const response = await fetch(`${prover.url}/proxy`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}${path}`, "T-REQUEST-ID": crypto.randomUUID(), "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body }),
      });
      return { status: response.status, error: ((await response.json()) as { error: { code: string; message: string } }).error };
    };
    for (const entry of ["res:query:token", "res:path:2"]) {
      const { status, error } = await refusal("/chunked/acct-5521/info?token=qs-secret-0042", { "T-REDACTED": entry });
      expect(status).toBe(400);
      expect(error.code).toBe("invalid_redaction");
      expect(error.message).toContain("request line");
      expect(error.message).not.toContain("qs-secret-0042");
    }
    const { status, error } = await refusal("/echo", { authorization: "Bearer tok-5151-x" }, JSON.stringify({ a: 1 }));
    expect(status).toBe(400);
    expect(error.message).toContain("proxy mode");
    expect(error.message).not.toContain("tok-5151-x");
  }, 60_000);

  /** The proof for `requestId` from the SSE stream, verified by `cli verify --json`. */
  async function verifiedProof(requestId: string): Promise<{ text: string; verified: VerifiedJson }> {
    const { proofText } = proofData(await firstEvent(`${prover.url}/proof/${requestId}`, 240_000));
    const proofPath = join(scratchDir("redaction-e2e"), `${requestId}.json`);
    writeFileSync(proofPath, proofText);
    const result = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", proofPath, "--json"]);
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    return { text: proofText, verified: JSON.parse(result.stdout) as VerifiedJson };
  }

  const revealedBytes = (verified: VerifiedJson) =>
    [...verified.sent.revealed, ...verified.recv.revealed].map((r) => Buffer.from(r.data, "base64").toString("latin1")).join("|");

  test("locators hidden by an earlier pattern, echoed values and default-hidden credentials stay hidden", async () => {
    const secrets = { auth: "Bearer auth-tok-5151", cookie: "sid=ck-7373", session: "sess-9191", password: "pw-secret-2626" };
    const requestId = crypto.randomUUID();
    const patterns = [
      // Hides the response header's name and the echoed JSON key first: the two patterns after it must
      // still find the values those names locate.
      "search:session-token",
      "res:header:x-session-token",
      "res:body:headers.x-session-token",
      "req:body:password",
    ];
    const response = await fetch(`${prover.url}/proxy`, {
      method: "POST",
      headers: {
        ...REQUEST_SHOWN,
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/echo`,
        "T-REQUEST-ID": requestId,
        "T-REDACTED": patterns.join(", "),
        authorization: secrets.auth,
        cookie: secrets.cookie,
        "x-session-token": secrets.session,
        "content-type": "application/json",
      },
      body: JSON.stringify({ password: secrets.password, note: "keep-visible" }),
    });
    expect(response.status).toBe(200);
    // The client's own answer is not redacted: the target echoed everything.
    const echoed = (await response.json()) as { headers: Record<string, string>; body: string };
    expect(echoed.headers.authorization).toBe(secrets.auth);
    expect(echoed.headers.cookie).toBe(secrets.cookie);
    expect(JSON.parse(echoed.body).password).toBe(secrets.password);
    expect(response.headers.get("x-session-token")).toBe(secrets.session);

    const { text, verified } = await verifiedProof(requestId);
    const revealed = revealedBytes(verified);
    for (const secret of [...Object.values(secrets), "auth-tok-5151", "ck-7373"]) {
      expect(revealed).not.toContain(secret);
      expect(text).not.toContain(secret);
    }
    // Credential headers: names visible, values hidden, without the client naming them.
    expect(verified.sent.text).toContain(`authorization: ${hidden(secrets.auth)}\r\n`);
    expect(verified.sent.text).toContain(`cookie: ${hidden(secrets.cookie)}\r\n`);
    // The search hid the header's name, and the header's value is hidden all the same.
    expect(verified.recv.text).toContain(`x-${hidden("session-token")}: ${hidden(secrets.session)}\r\n`);
    // The request's copy of the session token is hidden by default (its header's name says it holds a secret), and its
    // name's words as an echo of the search's.
    expect(verified.sent.text).toContain(`x-${hidden("session-token")}: ${hidden(secrets.session)}\r\n`);
    // What no pattern named stays visible on both sides.
    expect(verified.sent.text).toContain('"note":"keep-visible"');
    expect(verified.recv.text).toContain('\\"note\\":\\"keep-visible\\"');

    expect(verified.redactions.map((r) => [r.pattern, r.matched, r.declaredBy])).toEqual([
      ["search:*", true, "prover"],
      ["res:header:x-session-token", true, "prover"],
      ["res:body:headers.x-session-token", true, "prover"],
      ["req:body:password", true, "prover"],
      ["default:req:header:authorization", true, "prover"],
      ["default:req:header:cookie", true, "prover"],
      ["default:req:header:x-session-token", true, "prover"],
      ["echo:*", true, "prover"],
    ]);
    const echoes = verified.redactions.at(-1)!.spans;
    expect(new Set(echoes.map((s) => s.direction))).toEqual(new Set(["sent", "recv"]));
    expect(verified.hiddenRanges).toContainEqual({ direction: "sent", start: expect.any(Number), end: expect.any(Number), covers: { kind: "header-value", name: "authorization" }, whole: true });
  }, 300_000);

  test("a 401 body echoing a bearer token, a cookie value, a Basic user and password and a percent-encoded value: none in the proof", async () => {
    const secrets = {
      bearer: "sk_live_51HxQe2Ek9",
      sid: "sess-7d1f3a9b",
      serviceUser: "svc-ledger",
      servicePassword: "pw-hunter-4242",
      password: "p@ss w/rd-8080",
    };
    const encodedPassword = encodeURIComponent(secrets.password);
    const serviceCredential = Buffer.from(`${secrets.serviceUser}:${secrets.servicePassword}`).toString("base64");
    const requestId = crypto.randomUUID();
    const response = await fetch(`${prover.url}/proxy`, {
      method: "POST",
      headers: {
        ...REQUEST_SHOWN,
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/refused`,
        "T-REQUEST-ID": requestId,
        // Authorization and Cookie are hidden by default; the echoes of what is inside them are the guard's.
        "T-REDACTED": "req:header:x-service-authorization, req:body:password",
        "T-PROVE-FAILED-REQ": "true",
        authorization: `Bearer ${secrets.bearer}`,
        cookie: `lang=en; sid=${secrets.sid}`,
        "x-service-authorization": `Basic ${serviceCredential}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ password: secrets.password }),
    });
    expect(response.status).toBe(401);
    // The client's own answer is not redacted: the target echoed every secret.
    const answer = (await response.json()) as Record<string, string>;
    expect(answer).toEqual({
      error: `invalid api key ${secrets.bearer}`,
      session: `session ${secrets.sid} expired`,
      service: `service user ${secrets.serviceUser} refused password ${secrets.servicePassword}`,
      retry: `/login?password=${encodedPassword}`,
    });

    const { text, verified } = await verifiedProof(requestId);
    const revealed = revealedBytes(verified);
    for (const secret of [...Object.values(secrets), encodedPassword, serviceCredential, "p%40ss", "w%2Frd"]) {
      expect(revealed).not.toContain(secret);
      expect(text).not.toContain(secret);
    }
    // Exactly the echoed secrets are hidden; the words around them stay readable.
    expect(verified.recv.text).toContain(`"error":"invalid api key ${hidden(secrets.bearer)}"`);
    expect(verified.recv.text).toContain(`"session":"session ${hidden(secrets.sid)} expired"`);
    expect(verified.recv.text).toContain(`"service":"service user ${hidden(secrets.serviceUser)} refused password ${hidden(secrets.servicePassword)}"`);
    expect(verified.recv.text).toContain(`"retry":"/login?password=${hidden(encodedPassword)}"`);
    expect(verified.recv.text).toStartWith("HTTP/1.1 401 ");
    expect(verified.redactions.map((r) => r.pattern)).toEqual([
      "req:header:x-service-authorization",
      "req:body:password",
      "default:req:header:authorization",
      "default:req:header:cookie",
      "echo:*",
    ]);
    expect(verified.redactions.at(-1)!.spans.filter((s) => s.direction === "recv")).toHaveLength(5);
  }, 300_000);

  test("an answer compressed though identity was asked: 502 target_encoding_refused to the client and the stream, no proof", async () => {
    const requestId = crypto.randomUUID();
    const response = await fetch(`${prover.url}/proxy`, {
      // The answer's encoding is read before any proof, the same in every mode: proxy mode's is quick.
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/gzip`, "T-REQUEST-ID": requestId, "T-PROOF-MODE": "proxy" },
    });
    expect(response.status).toBe(502);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("target_encoding_refused");
    expect(body.error.message).toContain("(gzip)");

    const failure = errorData(await firstEvent(`${prover.url}/proof/${requestId}`, 240_000));
    expect(failure).toEqual({ requestId, code: "target_encoding_refused", message: body.error.message });
    const store = await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=100`);
    const stored = (await store.json()) as { messages: { content: { body?: { requestId?: string } } }[] };
    expect(stored.messages.map((m) => m.content.body?.requestId)).not.toContain(requestId);
  }, 300_000);

  test("a pattern that matches nothing: the client gets its answer, the stream an error naming the entry, and no proof is stored", async () => {
    const requestId = crypto.randomUUID();
    const response = await fetch(`${prover.url}/proxy`, {
      headers: {
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`,
        "T-REQUEST-ID": requestId,
        "T-REDACTED": "res:body:user.name, res:body: balance",
        // Patterns are matched on the answer, the same in every mode (the MPC test above matches them in MPC).
        "T-PROOF-MODE": "proxy",
      },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { secret: string }).secret).toBe(SECRET_VALUE);

    const failure = errorData(await firstEvent(`${prover.url}/proof/${requestId}`, 240_000));
    expect(failure.requestId).toBe(requestId);
    expect(failure.code).toBe("redaction_unmatched");
    expect(failure.message).toContain("entry 2");
    expect(failure.message).not.toContain("balance");

    const store = await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=100`);
    expect(store.status).toBe(200);
    const stored = (await store.json()) as { messages: { content: { body?: { requestId?: string } } }[] };
    expect(Array.isArray(stored.messages)).toBe(true);
    expect(stored.messages.map((m) => m.content.body?.requestId)).not.toContain(requestId);
    expect(prover.log()).not.toContain("balance");
  }, 300_000);
});
