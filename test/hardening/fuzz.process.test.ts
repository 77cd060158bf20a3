import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { AppError } from "../../src/core/errors.ts";
import { loadNotaryConfig, parseNotaryConfig } from "../../src/notary/config.ts";
import { scratchDir } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { signedSample } from "../proof/fixtures.ts";

/**
 * Bad input, generated: every answer is a 4xx JSON error (or a 2xx for input that is valid) and every
 * exit code is a clean one; never a 5xx, a crash or a hang. The prover only allows one host, which does
 * not resolve, so no generated request can start an MPC session: a /proxy call valid whole gets that host's
 * 502 `target_unresolvable` (fast-check found one: a PUT without a body to https://allowed.invalid/i).
 */
const ALLOWED = "allowed.invalid";
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const STACK_FRAME = /^\s+at .+[:(]/m;

let prover: RunningProver;

beforeAll(async () => {
  prover = await startProver(SOURCE_CLI, 1, {
    PROVER_ALLOW_PRIVATE_TARGETS: "0",
    PROVER_ALLOWED_HOSTS: ALLOWED,
    PROVER_MAX_BODY_BYTES: "4096",
    PROVER_POOL_SIZE: "0",
  });
}, 90_000);

afterAll(async () => {
  expect(await prover?.stop()).toBe(0);
  // No generated request may have crashed a handler or left a rejection unhandled.
  expect(prover.log()).not.toMatch(/unhandled|internal error|panicked/i);
  expect(prover.log()).not.toMatch(STACK_FRAME);
}, 120_000);

/** Printable ASCII, the most a header value can carry through fetch. */
const ascii = (maxLength: number) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });
const oneOf = <T>(...values: T[]) => fc.constantFrom(...values);

const hostArb = fc.oneof(
  oneOf(ALLOWED, "localhost", "127.0.0.1", "[::1]", "[::ffff:7f00:1]", "2130706433", "0177.0.0.1", "169.254.169.254", "0", "[fd00:ec2::254]"),
  fc.domain(),
  fc.ipV4().map(String),
  fc.ipV6().map((ip) => `[${ip}]`),
  ascii(20),
);
const urlArb = fc.oneof(
  fc.tuple(oneOf("https", "http", "ftp", "file", "gopher", "HTTPS", ""), hostArb, fc.option(fc.integer({ min: 0, max: 70000 })), ascii(30)).map(
    ([scheme, host, port, path]) => `${scheme}://${host}${port === null ? "" : `:${port}`}/${path}`,
  ),
  fc.webUrl(),
  ascii(60),
);
const patternArb = fc
  .array(
    fc.oneof(
      fc.tuple(oneOf("req:header:", "res:header:", "req:body:", "res:body:", "res:query:", "res:path:", "search:", "nope:", ""), ascii(15)).map(([k, v]) => k + v),
      ascii(25),
    ),
    { maxLength: 5 },
  )
  .map((entries) => entries.join(","));
const requestIdArb = fc.oneof(fc.uuid(), fc.uuid({ version: 4 }), ascii(40), oneOf("", "00000000-0000-0000-0000-000000000000"));
const bodyArb = fc.oneof(
  fc.constant(undefined),
  fc.json(),
  ascii(200),
  fc.uint8Array({ maxLength: 300 }),
  fc.constant("x".repeat(5000)),
);

async function expectClientError(response: Response): Promise<void> {
  const text = await response.text();
  if (response.status < 400 || response.status >= 500) throw new Error(`expected a 4xx, got ${response.status}: ${text}`);
  const body = JSON.parse(text) as { error: { code: string; message: string } | string };
  expect(body.error).toBeDefined();
  expect(text).not.toMatch(STACK_FRAME);
}

describe("/proxy under generated input", () => {
  test("headers, methods and bodies: always a 4xx JSON error, never a 5xx or a hang", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          url: fc.option(urlArb),
          requestId: fc.option(requestIdArb),
          patterns: fc.option(patternArb),
          proveFailed: fc.option(fc.oneof(oneOf("true", "false", "1", "0", "TRUE", " yes "), ascii(8))),
          method: oneOf("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"),
          body: bodyArb,
          extraHeader: fc.option(fc.tuple(oneOf("x-any", "content-type", "authorization", "t-unknown"), ascii(30))),
        }),
        async (input) => {
          const headers: Record<string, string> = {};
          if (input.url !== null) headers["t-proxy-url"] = input.url;
          if (input.requestId !== null) headers["t-request-id"] = input.requestId;
          if (input.patterns !== null) headers["t-redacted"] = input.patterns;
          if (input.proveFailed !== null) headers["t-prove-failed-req"] = input.proveFailed;
          if (input.extraHeader !== null) headers[input.extraHeader[0]] = input.extraHeader[1];
          const hasBody = input.body !== undefined && input.method !== "GET" && input.method !== "OPTIONS";
          const body = !hasBody ? undefined : typeof input.body === "string" || input.body instanceof Uint8Array ? input.body : JSON.stringify(input.body);
          const response = await fetch(`${prover.url}/proxy`, { method: input.method, headers, body, signal: AbortSignal.timeout(10_000) });
          // Input valid whole reaches the one allowed host, which does not resolve: that 502, with its code, and no other.
          if (response.status === 502 && input.url !== null && URL.canParse(input.url) && new URL(input.url).hostname === ALLOWED) {
            expect(((await response.json()) as { error: { code: string } }).error.code).toBe("target_unresolvable");
            return;
          }
          await expectClientError(response);
        },
      ),
      { numRuns: RUNS * 2 },
    );
  }, 120_000);
});

describe("the message store under generated input", () => {
  const segment = fc.oneof(ascii(12), fc.integer({ min: -5, max: 1e12 }).map(String), oneOf("0", "-1", "1e3", "%", "%zz", "..", "NaN"));
  const queryType = fc.oneof(oneOf("last", "from", "range", "LAST", "resend"), ascii(8));
  const paramName = oneOf(
    "count", "fromTimestamp", "toTimestamp", "fromSequenceNumber", "toSequenceNumber", "publisherId", "msgChainId", "format",
    "verifyNetworkResponses", "requestId", "version", "junk",
  );
  const params = fc.array(fc.tuple(paramName, fc.oneof(segment, oneOf("raw", "object", "protocol", "true", "false", ""))), { maxLength: 6 });

  test("query paths and parameters: 2xx or a 4xx JSON error, never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(segment, segment, queryType, params, fc.boolean(), async (id, partition, type, pairs, sse) => {
        const query = new URLSearchParams(pairs).toString();
        const path = `/stores/${encodeURIComponent(id)}/data/partitions/${encodeURIComponent(partition)}/${encodeURIComponent(type)}`;
        const response = await fetch(`${prover.url}${path}?${query}`, {
          headers: sse ? { accept: "text/event-stream" } : {},
          signal: AbortSignal.timeout(10_000),
        });
        if (response.ok) {
          const text = await response.text();
          if (sse) expect(text).toContain("event: metadata");
        } else {
          await expectClientError(response);
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  test("publish bodies: 200 for valid entries, a 4xx JSON error otherwise", async () => {
    await fc.assert(
      fc.asyncProperty(segment, fc.oneof(fc.json(), ascii(100), fc.jsonValue().map((v) => JSON.stringify({ content: v }))), async (partition, body) => {
        const response = await fetch(`${prover.url}/stores/fuzz/data/partitions/${encodeURIComponent(partition)}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        if (!response.ok) await expectClientError(response);
        else expect(((await response.json()) as { messages: unknown[] }).messages.length).toBeGreaterThan(0);
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});

describe("cli verify under generated proof files", () => {
  test("a mutated proof exits 1 or 2 with one error line, never 0 and never a stack trace", async () => {
    const dir = scratchDir("fuzz-verify");
    const { key, proof } = signedSample();
    const pubPath = join(dir, "notary.pub");
    writeFileSync(pubPath, key.publicKeyPem);
    const original = JSON.stringify(proof);
    const mutation = fc.oneof(
      // Replace one character.
      fc.tuple(fc.nat(original.length - 1), ascii(1).filter((c) => c.length === 1)).map(([at, c]) => original.slice(0, at) + c + original.slice(at + 1)),
      // Cut the file short.
      fc.nat(original.length - 1).map((at) => original.slice(0, at)),
      // Something else entirely.
      fc.oneof(fc.json(), ascii(80), fc.constant(""), fc.constant("null"), fc.constant("[]")),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(mutation, async (text) => {
        fc.pre(text !== original);
        const path = join(dir, `proof-${run++}.json`);
        writeFileSync(path, text);
        const result = await runCli(SOURCE_CLI, ["verify", "--notary-pub-key", pubPath, "--proof", path]);
        // A changed character inside a base64 pad or JSON whitespace can leave a proof valid; anything else fails.
        if (result.exitCode === 0) expect(JSON.stringify(JSON.parse(text))).toBe(original);
        else {
          expect([1, 2]).toContain(result.exitCode);
          expect(result.stderr.split("\n").filter((l) => l.startsWith("error:"))).toHaveLength(1);
          expect(result.stderr).not.toMatch(STACK_FRAME);
        }
      }),
      { numRuns: Math.min(RUNS, 30) },
    );
  }, 120_000);
});

describe("notary config files under generated input", () => {
  const expectConfigOutcome = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect(["config_invalid", "file_unreadable"]).toContain((error as AppError).code);
    }
  };

  test("parsed documents: a config or a config_invalid error, nothing else", () => {
    const value = fc.oneof(fc.jsonValue(), fc.anything());
    const section = fc.dictionary(oneOf("enabled", "whitelist", "timeout", "max_sent_data", "level", "format", "private_key_path", "x"), value);
    const document = fc.oneof(
      value,
      fc.dictionary(oneOf("host", "port", "concurrency", "notarization", "tls", "log", "auth", "extra"), fc.oneof(value, section)),
    );
    fc.assert(fc.property(document, (doc) => expectConfigOutcome(() => parseNotaryConfig(doc, "/srv"))), { numRuns: RUNS * 10 });
  });

  test("YAML text from files: a config or a config error, and `cli notary start` exits 2 on the errors", async () => {
    const dir = scratchDir("fuzz-notary");
    const yamlish = fc
      .array(fc.oneof(ascii(30), oneOf("port: ", "host: ", "auth:\n  enabled: true", "  - ", ": :", "{", "[", "'", '"', "\t", "---", "&a", "*a", "!!binary x")), {
        maxLength: 8,
      })
      .map((parts) => parts.join("\n"));
    const invalid: string[] = [];
    let n = 0;
    fc.assert(
      fc.property(yamlish, (text) => {
        const path = join(dir, `notary-${n++}.yaml`);
        writeFileSync(path, text);
        let accepted = true;
        try {
          loadNotaryConfig(path);
        } catch (error) {
          accepted = false;
          expect(error).toBeInstanceOf(AppError);
          expect(["config_invalid", "file_unreadable"]).toContain((error as AppError).code);
        }
        if (!accepted && invalid.length < 8) invalid.push(path);
      }),
      { numRuns: RUNS * 4 },
    );
    expect(invalid.length).toBeGreaterThan(0);
    for (const path of invalid) {
      const result = await runCli(SOURCE_CLI, ["notary", "start", "--config", path]);
      expect(result.exitCode).toBe(2);
      expect(result.stderr.split("\n").filter((l) => l.startsWith("error:"))).toHaveLength(1);
      expect(result.stderr).not.toMatch(STACK_FRAME);
    }
  }, 120_000);
});
