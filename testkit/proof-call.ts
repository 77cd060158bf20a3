/** A /proxy call as a mode receives it (src/prover/proving/mode.ts, ProofCall): a GET of `url`, nothing hidden or asked beyond it. */
import type { HeaderField } from "../src/core/exchange.ts";
import type { ProofCall } from "../src/prover/proving/mode.ts";

export function proofCallOf(url: string, overrides: Partial<ProofCall> = {}, extraHeaders: HeaderField[] = []): ProofCall {
  const parsed = new URL(url);
  const pathAndQuery = `${parsed.pathname}${parsed.search}`;
  const port = Number(parsed.port || 443);
  return {
    requestId: crypto.randomUUID(),
    target: { url: parsed, serverName: parsed.hostname, port, pathAndQuery },
    exchange: { method: "GET", pathAndQuery, headers: [["host", parsed.host], ...extraHeaders], body: undefined },
    patterns: [],
    allowUnmatched: false,
    proveFailed: false,
    announced: {},
    claims: [],
    quorum: 1,
    modeHeaders: {},
    ...overrides,
  };
}
