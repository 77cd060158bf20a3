import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { scratchDir, tlsFixture } from "../support/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../support/prover.ts";
import { firstEvent, proofData } from "../support/sse.ts";
import { SECRET_HEADER_VALUE, SECRET_VALUE, startTarget } from "../support/target.ts";
import { TARGET_HOST } from "../support/tls-fixture.ts";

const HIDDEN = "█";
const hidden = (value: string) => HIDDEN.repeat(Buffer.byteLength(value));

/** One real MPC session in which every kind of pattern hides something, checked in `cli verify --json`. */
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
  });

  test("header, body, query, path and search patterns hide exactly their values, also across chunks", async () => {
    const secrets = {
      apiKey: "hdr-secret-9f2c",
      pin: "pin-7731",
      account: "acct-5521",
      token: "qs-secret-0042",
    };
    const requestId = crypto.randomUUID();
    const patterns = [
      "req:header:x-api-key",
      "req:body:pin",
      "res:header:x-secret-token",
      "res:body:secret",
      "res:query:token",
      "res:path:2",
      "search:alice",
      "res:body:no.such.key",
    ];
    const response = await fetch(`${prover.url}/proxy`, {
      method: "POST",
      headers: {
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/chunked/${secrets.account}/info?token=${secrets.token}&view=1`,
        "T-REQUEST-ID": requestId,
        "T-REDACTED": patterns.join(","),
        "x-api-key": secrets.apiKey,
        "content-type": "application/json",
      },
      body: JSON.stringify({ pin: secrets.pin, keep: true }),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { secret: string }).secret).toBe(SECRET_VALUE);

    const { proofText: data } = proofData(await firstEvent(`${prover.url}/proof/${requestId}`, 240_000));
    const proofPath = join(scratchDir("redaction-e2e"), "proof.json");
    writeFileSync(proofPath, data);
    const result = await runCli(SOURCE_CLI, ["verify", "--notary-pub-key", prover.notaryPubPath, "--proof", proofPath, "--json"]);
    expect(result.exitCode).toBe(0);
    const verified = JSON.parse(result.stdout) as {
      sent: { text: string; revealed: { data: string }[] };
      recv: { text: string; revealed: { data: string }[] };
      redactions: { pattern: string; matched: boolean; spans: { direction: string }[] }[];
    };
    const { sent, recv } = verified;

    // Request line: path segment 2 and the token query value hidden, the rest visible.
    expect(sent.text).toStartWith(`POST /chunked/${hidden(secrets.account)}/info?token=${hidden(secrets.token)}&view=1 HTTP/1.1\r\n`);
    expect(sent.text).toContain(`x-api-key: ${hidden(secrets.apiKey)}\r\n`);
    expect(sent.text).toContain(`{"keep":true,"pin":${hidden(`"${secrets.pin}"`)}}`);
    // Response: a header value, a body value split by a chunk boundary, and every "alice".
    expect(recv.text).toContain(`x-secret-token: ${hidden(SECRET_HEADER_VALUE)}\r\n`);
    expect(recv.text).toMatch(/transfer-encoding: chunked\r\n/i);
    expect(recv.text).not.toContain("alice");
    expect(recv.text).toContain(`"name":"${hidden("alice")}"`);
    // The secret is split across two chunks: its pieces are hidden, the chunk framing between them is not.
    const firstPiece = SECRET_VALUE.slice(0, 4);
    const secondPiece = SECRET_VALUE.slice(4);
    expect(recv.text).toMatch(
      new RegExp(`"secret":${hidden(`"${firstPiece}`)}\\r\\n[0-9a-fA-F]+\\r\\n${hidden(`${secondPiece}"`)},"items"`),
    );

    const everything = [...sent.revealed, ...recv.revealed].map((r) => Buffer.from(r.data, "base64").toString()).join("|");
    for (const value of [...Object.values(secrets), SECRET_VALUE, SECRET_HEADER_VALUE, "alice", firstPiece + secondPiece]) {
      expect(everything).not.toContain(value);
      expect(data).not.toContain(value);
    }
    expect(verified.redactions.map((r) => [r.pattern, r.matched])).toEqual([
      ["req:header:x-api-key", true],
      ["req:body:pin", true],
      ["res:header:x-secret-token", true],
      ["res:body:secret", true],
      ["res:query:token", true],
      ["res:path:2", true],
      ["search:*", true],
      ["res:body:no.such.key", false],
    ]);
    expect(verified.redactions[3]!.spans).toHaveLength(2); // the two pieces around the chunk boundary
  }, 300_000);
});
