/** The soak's real processes: a `cli notary start` with auth on, a `cli prover start` using it, the local TLS target. */
import type { Server } from "bun";
import { TEST_SESSION, tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { startTarget } from "../../testkit/target.ts";
import { type RunningNotary, startKeyedNotary } from "../../testkit/notary.ts";

/** The limits the abuse runs into; small so that a short run reaches every one of them. */
export const SOAK_LIMITS = {
  notaryConcurrency: 8,
  notaryConnectTimeoutS: 3,
  sseTotal: 48,
  ssePerRequest: 16,
  storeStreams: 8,
  idleTimeoutS: 5,
  unknownRequestTimeoutS: 20,
} as const;

export interface SoakServers {
  notary: RunningNotary;
  notaryKey: string;
  notaryPubPath: string;
  prover: RunningProver;
  target: Server<undefined>;
  stop(): Promise<void>;
}

export async function startSoakServers(): Promise<SoakServers> {
  const notaryKey = `soak-${crypto.randomUUID()}`;
  const { notary, pubPath } = await startKeyedNotary(notaryKey, [
    "host: 127.0.0.1", "port: 0", `concurrency: ${SOAK_LIMITS.notaryConcurrency}`,
    "notarization:", `  max_sent_data: ${TEST_SESSION.maxSentData}`, `  max_recv_data: ${TEST_SESSION.maxRecvData}`,
    `  connect_timeout: ${SOAK_LIMITS.notaryConnectTimeoutS}`, "  private_key_path: notary.key",
  ]);
  const target = startTarget(tlsFixture());
  const prover = await startProver(SOURCE_CLI, target.port!, {
    PROVER_NOTARY_URL: notary.url,
    PROVER_NOTARY_API_KEY: notaryKey,
    PROVER_SSE_TOTAL: String(SOAK_LIMITS.sseTotal),
    PROVER_SSE_PER_REQUEST: String(SOAK_LIMITS.ssePerRequest),
    PROVER_STORE_STREAMS: String(SOAK_LIMITS.storeStreams),
    PROVER_IDLE_TIMEOUT: `${SOAK_LIMITS.idleTimeoutS}s`,
    PROVER_UNKNOWN_REQUEST_TIMEOUT: `${SOAK_LIMITS.unknownRequestTimeoutS}s`,
  });
  return {
    notary,
    notaryKey,
    notaryPubPath: pubPath,
    prover,
    target,
    async stop() {
      await prover.stop();
      notary.process.kill("SIGTERM");
      await notary.process.exited;
      target.stop(true);
    },
  };
}
