/**
 * How many MPC sessions a GET with a hidden header takes: the engine orders headers itself, and a GET whose Host it
 * wrote after the hidden value is exchanged again in a fresh session (src/prover/mpc/request-layout.ts). Fresh
 * provers from source, each making GETs one after another; prints each GET's sessions (its t-layout-sessions) and
 * their mean.
 *   bun scripts/bench-layout.ts [--provers N] (default 3) [--gets K] (default 2)
 */
import { tlsFixture } from "../testkit/env.ts";
import { SOURCE_CLI, startProver } from "../testkit/prover.ts";
import { startTarget } from "../testkit/target.ts";
import { TARGET_HOST } from "../testkit/tls-fixture.ts";

const argument = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(name);
  return index >= 0 ? Math.max(1, Number(process.argv[index + 1])) : fallback;
};

const provers = argument("--provers", 3);
const gets = argument("--gets", 2);
const target = startTarget(tlsFixture());
const sessions: number[][] = [];
try {
  for (let p = 0; p < provers; p++) {
    const prover = await startProver(SOURCE_CLI, target.port!, { PROVER_PROOF_MODE: "mpc" });
    const taken: number[] = [];
    try {
      for (let g = 0; g < gets; g++) {
        const response = await fetch(`${prover.url}/proxy`, {
          headers: {
            "T-PROXY-URL": `https://${TARGET_HOST}:${target.port}/data`,
            "T-REQUEST-ID": crypto.randomUUID(),
            "T-REDACTED": "req:header:x-api-key",
            "x-api-key": "a-hidden-credential",
          },
        });
        const body = await response.text();
        if (response.status !== 200) throw new Error(`/proxy answered ${response.status}: ${body}`);
        taken.push(Number(response.headers.get("t-layout-sessions") ?? 1));
      }
    } finally {
      await prover.stop();
    }
    sessions.push(taken);
    console.log(`prover ${p + 1}: sessions per GET ${taken.join(", ")}`);
  }
} finally {
  target.stop(true);
}
const all = sessions.flat();
console.log(`${all.length} GETs with a hidden header: ${(all.reduce((a, b) => a + b, 0) / all.length).toFixed(2)} sessions each on average, ${Math.max(...all)} at most`);
