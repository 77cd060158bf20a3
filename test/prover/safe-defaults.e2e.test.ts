/**
 * Safe by default, with one real MPC session through `cli prover start` (embedded notary, the local TLS
 * target's /echo): headers that identify the end user do not reach the target nor the proof, and the proof
 * says that the prover's embedded notary signed it, which `cli verify` shows.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { tlsFixture } from "../support/env.ts";
import { verifyWithCli } from "../support/prove.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../support/prover.ts";
import { openStream, proofData } from "../support/sse.ts";
import { startTarget } from "../support/target.ts";
import { TARGET_HOST } from "../support/tls-fixture.ts";

const MPC_MS = 240_000;
/** What a reverse proxy, a CDN or a browser adds about the end user. */
const IDENTIFYING = {
  "x-forwarded-for": "198.51.100.23",
  "x-real-ip": "198.51.100.23",
  forwarded: "for=198.51.100.23;proto=https",
  "cf-connecting-ip": "198.51.100.23",
  "true-client-ip": "198.51.100.23",
  "x-client-ip": "198.51.100.23",
  via: "1.1 edge-proxy",
  origin: "https://dapp.example",
  referer: "https://dapp.example/account",
};

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

describe("one proof of a request carrying the end user's headers", () => {
  let echoed: { headers: Record<string, string> };
  let proofText: string;

  beforeAll(async () => {
    const requestId = crypto.randomUUID();
    const stream = await openStream(`${prover.url}/proof/${requestId}`, MPC_MS);
    const response = await fetch(`${prover.url}/proxy`, {
      headers: {
        "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/echo`,
        "T-REQUEST-ID": requestId,
        "x-app-version": "7",
        ...IDENTIFYING,
      },
    });
    expect(response.status).toBe(200);
    echoed = (await response.json()) as { headers: Record<string, string> };
    const [event] = await stream.events;
    proofText = proofData(event!).proofText;
  }, MPC_MS);

  test("the target gets the client's own headers but none that identify the end user", () => {
    expect(echoed.headers["x-app-version"]).toBe("7");
    for (const name of Object.keys(IDENTIFYING)) expect(echoed.headers[name]).toBeUndefined();
  });

  test("the proof's request holds none of them either", () => {
    const proof = JSON.parse(proofText) as { body: { transcript: { sent: { revealed: { data: string }[] } } } };
    const sent = proof.body.transcript.sent.revealed.map((range) => Buffer.from(range.data, "base64").toString("latin1")).join("");
    expect(sent).toContain("x-app-version: 7");
    expect(sent).not.toContain("198.51.100.23");
    expect(sent).not.toContain("dapp.example");
  });

  test("the proof says the prover's embedded notary signed it, and cli verify shows it", async () => {
    expect((JSON.parse(proofText) as { body: { notary: { embedded?: boolean } } }).body.notary.embedded).toBe(true);
    const verified = await verifyWithCli(proofText, prover.notaryPubPath);
    expect(verified.exitCode).toBe(0);
    expect((JSON.parse(verified.stdout) as { notary: { embedded: boolean | null } }).notary.embedded).toBe(true);
  });
});
