import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { useBuiltBinary } from "../../../testkit/binary.ts";
import { tempDir } from "../../../testkit/env.ts";
import { BINARY_CLI, type RunningProver, runCli, startProver } from "../../../testkit/prover.ts";
import { errorData, firstEvent, openStream } from "../../../testkit/sse.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";

useBuiltBinary();

/**
 * A `/proxy` call refused before any work (a 4xx for its own input) settles its request id with that refusal, so a
 * client that subscribed first hears the code at once. The prover here would answer an unused id with
 * `unknown_request` only after ten minutes: a refusal not delivered leaves the stream silent and the test fails at
 * its own deadline. Then `cli verify` on what such a client may have saved says what the file holds.
 */
const TARGET = `https://${TARGET_HOST}/data`;

let prover: RunningProver;
beforeAll(async () => {
  prover = await startProver(BINARY_CLI, 443, { PROVER_UNKNOWN_REQUEST_TIMEOUT: "600s", PROVER_MAX_BODY_BYTES: "100" });
}, 60_000);
afterAll(async () => {
  expect(await prover?.stop()).toBe(0);
});

interface Refused {
  status: number;
  error: { code: string; message: string };
}

/** Subscribes to a fresh id, then calls /proxy with `headers` (and `init`); returns the answer and the stream's event. */
async function refusedWhileSubscribed(headers: Record<string, string>, init: RequestInit = {}) {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${prover.url}/proof/${requestId}`, 60_000);
  const response = await fetch(`${prover.url}/proxy`, { ...init, headers: { "T-PROXY-URL": TARGET, "T-REQUEST-ID": requestId, ...headers } });
  const refused: Refused = { status: response.status, error: ((await response.json()) as { error: Refused["error"] }).error };
  const [event] = await stream.events;
  return { requestId, refused, event: errorData(event!) };
}

describe("refusals before any work reach the id's proof stream (dist/cli prover start)", () => {
  test("a bad redaction, header, method, body size or proxy-mode pattern: the subscriber gets the 4xx's code and message", async () => {
    const cases: [Record<string, string>, RequestInit, string][] = [
      [{ "T-REDACTED": "res:nothing:x" }, {}, "invalid_redaction"],
      [{ "T-PROVE-FAILED-REQ": "maybe" }, {}, "invalid_header"],
      // With the request hidden whole from the notary, a pattern naming the request cannot be honoured.
      [{ "T-PROOF-MODE": "proxy", "T-PROXY-REVEAL": "none", "T-REDACTED": "req:header:authorization" }, {}, "invalid_redaction"],
      [{ "T-MAX-RECV-DATA": "lots" }, {}, "invalid_header"],
      [{}, { method: "PATCH" }, "unsupported_method"],
      [{ "content-type": "application/json" }, { method: "POST", body: JSON.stringify({ pad: "x".repeat(200) }) }, "payload_too_large"],
    ];
    for (const [headers, init, code] of cases) {
      const { requestId, refused, event } = await refusedWhileSubscribed(headers, init);
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(refused.status).toBeLessThan(500);
      expect(refused.error.code).toBe(code);
      expect(event).toEqual({ requestId, code, message: refused.error.message });
    }
  }, 120_000);

  test("the refused id is spent: a late subscriber gets the same refusal, and a second call with it does not replace it", async () => {
    const { requestId, refused } = await refusedWhileSubscribed({ "T-REDACTED": "res:nothing:x" });
    const again = await fetch(`${prover.url}/proxy`, { headers: { "T-PROXY-URL": TARGET, "T-REQUEST-ID": requestId, "T-PROVE-FAILED-REQ": "maybe" } });
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("invalid_header");
    const late = errorData(await firstEvent(`${prover.url}/proof/${requestId}`, 60_000));
    expect(late).toEqual({ requestId, code: "invalid_redaction", message: refused.error.message });
  }, 60_000);

  test("cli verify on a saved error event, the stream's SSE text, the 400's body or other JSON says what the file holds", async () => {
    const { requestId, refused } = await refusedWhileSubscribed({ "T-REDACTED": "res:nothing:x" });
    const dir = tempDir("not-a-proof");
    const sse = await (await fetch(`${prover.url}/proof/${requestId}`)).text();
    const files: [string, string, string][] = [
      ["event.sse", sse, `SSE text of an error event: invalid_redaction: ${refused.error.message}`],
      ["event.json", JSON.stringify({ requestId, ...refused.error }), `an error event: invalid_redaction: ${refused.error.message}`],
      ["answer.json", JSON.stringify({ error: refused.error }), `an error answer of the prover: invalid_redaction: ${refused.error.message}`],
      ["info.json", await (await fetch(`${prover.url}/info`)).text(), "JSON that is not a proof: an object with the keys "],
    ];
    for (const [name, text, holds] of files) {
      writeFileSync(join(dir, name), text);
      const result = await runCli(BINARY_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", join(dir, name)]);
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toStartWith(`error: the file holds ${holds}`);
      expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    }
  }, 60_000);
});
