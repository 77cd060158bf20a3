import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startNotaryServer } from "../../../../src/app/notary.ts";
import type { ProverServer } from "../../../../src/app/prover.ts";
import { trustAnchors } from "../../../../src/engine/trust-anchor.ts";
import { localVerifiers } from "../../../../src/engine/verifier.ts";
import { createLogger } from "../../../../src/base/log.ts";
import type { NotaryModeBackend } from "../../../../src/notary/modes.ts";
import { generateKey } from "../../../../src/proof/keys.ts";
import { modeFacts } from "../../../../src/proof/modes.ts";
import { renderVerifiedProof, verifiedProofJson } from "../../../../src/proof/render.ts";
import { verifyProof } from "../../../../src/proof/verify.ts";
import { tlsFixture } from "../../../../testkit/env.ts";
import { SOURCE_CLI, runCli, startProverInProcess } from "../../../../testkit/prover.ts";
import { openStream, proofData } from "../../../../testkit/sse.ts";
import { SECRET_VALUE, startTarget } from "../../../../testkit/target.ts";
import { TARGET_HOST } from "../../../../testkit/tls-fixture.ts";
import { STAND_IN } from "./facts.ts";
import { standInNotary } from "./notary.ts";
import { standInProver } from "./prover.ts";

/**
 * A third mode costs one folder: this one's prover side and notary side (beside this file), each given to the server
 * as an option, give a signed proof through the real /proxy of the composed prover server (what `cli prover start`
 * runs) with its embedded notary. The proof verifies with verifyProof (what `cli verify` runs) and the viewer's report
 * code in a process that knows the mode (this one, while the server runs); `cli verify`, which does not, refuses it.
 */
let target: Server<undefined>;
let server: ProverServer;
let dataDir: string;
let notarySide: NotaryModeBackend;

beforeAll(async () => {
  const tls = tlsFixture();
  target = startTarget(tls);
  const policy = { allowPrivateTargets: true, resolve: new Map([[`${TARGET_HOST}:${target.port}`, "127.0.0.1"]]), allowedHosts: [], allowedPorts: [] };
  notarySide = standInNotary(policy, trustAnchors(tls.caPem));
  ({ server, dataDir } = await startProverInProcess(target.port!, {}, { proving: [standInProver], notary: [notarySide] }));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  target?.stop(true);
}, 60_000);

test("a mode given to the servers from its own folder proves through /proxy, and verifies where it is known", async () => {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${server.url}/proof/${requestId}`, 30_000);
  const response = await fetch(`${server.url}/proxy`, {
    headers: {
      "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`,
      "T-REQUEST-ID": requestId,
      "T-PROOF-MODE": "stand-in",
      "T-REDACTED": "res:body:secret",
      "T-STAND-IN-LABEL": "first",
    },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("t-proof-mode")).toBe("stand-in");
  // Its own header reached it, read by the route as the mode declared it.
  expect(response.headers.get("t-stand-in-label")).toBe("first");
  expect(response.headers.get("t-proof-id")).toBe(requestId);
  expect(((await response.json()) as { secret: string }).secret).toBe(SECRET_VALUE);

  const [event] = await stream.events;
  const { proofText } = proofData(event!);
  const notaryKey = readFileSync(join(dataDir, "notary.pub"), "utf8");
  const verified = verifyProof(proofText, notaryKey, { requestId, serverName: TARGET_HOST, mode: "stand-in", allowTestTrustAnchor: true });
  // The one body builder's rules held: the request shows its Host, the answer was checked whole, the notary says it is embedded.
  expect(verified.body).toMatchObject({ mode: "stand-in", serverPort: target.port, request: "revealed", responseFraming: "content-length", notary: { embedded: true } });
  expect(verified.sent.text).toStartWith(`GET /data HTTP/1.1\r\nhost: ${TARGET_HOST}:${target.port}\r\n`);
  expect(proofText).not.toContain(SECRET_VALUE);
  // The JSON value hidden whole, its quotes included.
  expect(verified.recv.text).toContain(`"secret":${"█".repeat(SECRET_VALUE.length + 2)},`);
  // Its EVM attestation is signed under the mode's own EIP-712 type, and checks.
  expect(verified.evm).not.toBeNull();

  // The viewer shows verifiedProofJson's report, with the mode's facts; cli verify's report says the same.
  const report = verifiedProofJson(verified);
  expect(report.mode).toBe("stand-in");
  expect(modeFacts(report.mode)?.summary).toBe(STAND_IN.summary);
  expect(renderVerifiedProof(verified)).toContain(`Proof mode:   stand-in (${STAND_IN.summary})`);

  // A verifier that does not know the mode (cli verify, another process) refuses the proof.
  const proofPath = join(dataDir, "stand-in-proof.json");
  writeFileSync(proofPath, proofText);
  const cli = await runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", join(dataDir, "notary.pub"), "--proof", proofPath]);
  expect(cli.exitCode).toBe(1);
  expect(cli.stderr.trim()).toBe('error: invalid proof: body.mode: unknown proof mode "stand-in" (this verifier knows mpc, proxy)');
}, 60_000);

test("its own /proxy header joins the prover's declaration: documented, checked by its schema, refused in another mode, as proxy mode's is in it", async () => {
  type Operation = { parameters?: { name: string; schema: { pattern?: string } }[]; responses: Record<string, { headers?: Record<string, unknown> }> };
  const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, Operation>> };
  const proxy = document.paths["/proxy"]!.get!;
  expect(proxy.parameters?.find((p) => p.name === "t-stand-in-label")?.schema.pattern).toBe("^[a-z]{1,16}$");
  expect(proxy.parameters?.find((p) => p.name === "t-proxy-reveal")).toBeDefined();
  expect(Object.keys(proxy.responses["default"]?.headers ?? {})).toContain("T-STAND-IN-LABEL");

  const refusal = async (headers: Record<string, string>) => {
    const response = await fetch(`${server.url}/proxy`, {
      headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`, "T-REQUEST-ID": crypto.randomUUID(), ...headers },
    });
    return { status: response.status, error: ((await response.json()) as { error: { code: string; message: string } }).error };
  };
  expect(await refusal({ "T-PROOF-MODE": "stand-in", "T-STAND-IN-LABEL": "Not A Label" })).toEqual({
    status: 400,
    error: { code: "invalid_header", message: "T-STAND-IN-LABEL must be 1-16 letters a-z" },
  });
  expect(await refusal({ "T-PROOF-MODE": "proxy", "T-STAND-IN-LABEL": "first" })).toEqual({
    status: 400,
    error: { code: "invalid_header", message: "T-STAND-IN-LABEL applies to stand-in mode only (T-PROOF-MODE: stand-in)" },
  });
  expect(await refusal({ "T-PROOF-MODE": "stand-in", "T-PROXY-REVEAL": "none" })).toEqual({
    status: 400,
    error: { code: "invalid_header", message: "T-PROXY-REVEAL applies to proxy mode only (T-PROOF-MODE: proxy)" },
  });
});

test("its notary routes are declared from its own schemas: validated by them, guarded by the key, listed in the notary's document", async () => {
  type Operation = { operationId: string; security?: unknown; requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> }; responses: Record<string, { description: string }> };
  // The prover's embedded notary takes its own key only: its session routes refuse a call without it, as declared.
  const embedded = await (await fetch(`${server.notary!.url}/openapi.json`)).json() as { paths: Record<string, Record<string, Operation>> };
  const create = embedded.paths["/modes/stand-in/session"]?.post;
  expect(create?.operationId).toBe("createStandInSession");
  expect(create?.security).toEqual([{ apiKey: [] }]);
  expect(Object.keys(create?.requestBody?.content["application/json"]?.schema.properties ?? {})).toEqual(["serverName", "port"]);
  expect(embedded.paths["/modes/stand-in/session/{id}/attestation"]?.post?.responses["400"]?.description).toContain("invalid_body");
  expect(Object.keys(embedded.paths["/modes/stand-in/session/{id}"] ?? {})).toEqual(["delete"]);
  expect((await fetch(`${server.notary!.url}/modes/stand-in/session`, { method: "POST", body: "{}" })).status).toBe(401);

  // A notary without keys: a session request the mode's schema refuses is invalid_body, named as the mode names it.
  const notary = startNotaryServer({
    host: "127.0.0.1",
    port: 0,
    sessions: { concurrency: 1, maxSentData: 1024, maxRecvData: 2048, timeoutMs: 30_000, connectTimeoutMs: 5_000 },
    verifiers: localVerifiers({ threads: 1 }),
    key: generateKey("secp256k1"),
    testTrustAnchor: true,
    furtherModes: [notarySide],
    log: createLogger({ level: "error" }),
  });
  try {
    const refused = await fetch(`${notary.url}/modes/stand-in/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ serverName: "", port: 443 }) });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ code: "invalid_body", message: expect.stringMatching(/^stand-in session request: serverName: /) });
  } finally {
    await notary.stop(0);
  }
});
