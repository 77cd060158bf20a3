import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type CliResult, SOURCE_CLI, runCli } from "./prover.ts";
import { type ProofData, openStream, proofData } from "./sse.ts";
import { TARGET_HOST } from "./tls-fixture.ts";

export interface ProvedExchange {
  requestId: string;
  /** /proxy's status and body. */
  status: number;
  answer: string;
  /** The proof event's parts; absent when /proxy did not answer 200. */
  proof?: ProofData;
}

/**
 * One proof the way a client makes it: the proof stream opened first, then `/proxy` for the test target's
 * `/data` with its secret hidden (`res:body:secret`), then the proof event.
 */
export async function proveData(proverUrl: string, targetPort: number, timeoutMs = 240_000): Promise<ProvedExchange> {
  const requestId = crypto.randomUUID();
  const stream = await openStream(`${proverUrl}/proof/${requestId}`, timeoutMs);
  const response = await fetch(`${proverUrl}/proxy`, {
    headers: { "T-PROXY-URL": `https://${TARGET_HOST}:${targetPort}/data`, "T-REQUEST-ID": requestId, "T-REDACTED": "res:body:secret" },
  });
  const answer = await response.text();
  if (response.status !== 200) return { requestId, status: response.status, answer };
  const [event] = await stream.events;
  return { requestId, status: response.status, answer, proof: proofData(event!) };
}

/** `cli verify --json` on a proof, written next to the notary's public key, with `flags` (`--allow-hidden-request`, …). */
export async function verifyWithCli(proofText: string, notaryPubPath: string, ...flags: string[]): Promise<CliResult> {
  const proofPath = join(dirname(notaryPubPath), `proof-${crypto.randomUUID()}.json`);
  writeFileSync(proofPath, proofText);
  return runCli(SOURCE_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", notaryPubPath, "--proof", proofPath, "--json", ...flags]);
}
