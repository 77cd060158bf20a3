/** The prover's metrics: proofs, /proxy and setup timings, and the live state of its parts, read at scrape time. */
import type { BackgroundWork } from "../engine/background.ts";
import type { ErrorCode } from "../core/errors.ts";
import type { SessionSizes } from "../core/session-sizes.ts";
import type { ProofMode } from "../proof/format.ts";
import { Counter, Histogram, SESSION_SECONDS_BUCKETS, newRegistry, readCounter, readGauge, sizeClass } from "./registry.ts";

/** What a /proxy call is timed by: its proof mode, and the size class of its session for a mode that sizes one (MPC). */
export interface ProxyCallKind {
  mode: ProofMode;
  sizes?: SessionSizes;
}

/** Where the prover's live numbers come from. */
export interface ProverSources {
  pool(): {
    ready: number;
    inUse: number;
    warming: number;
    setups: { running: number; waiting: number };
    served: Record<string, number>;
    failures: number;
  };
  /** Exchanges with targets running, and requests waiting for their turn. */
  exchanges(): { running: number; waiting: number };
  liveSessions(): number;
  /** Proxy-mode proofs running (no MPC session, no engine). */
  proxyModeSessions(): number;
  engineBytes(): number;
  rssBytes(): number;
  /** Engine hosts running, their resident memory, and how many were ended or replaced since start. */
  engineHosts(): { running: number; rssBytes: number; replaced: { hung: number; died: number } };
  sseSubscribers(): number;
  /** The embedded notary's open sessions; null with a remote notary. */
  notarySessions(): number | null;
}

export class ProverMetrics {
  readonly registry = newRegistry();
  private readonly proofs = new Counter({
    name: "tlsproof_proofs_total",
    help: "Request ids settled: outcome is proof, or the error code no proof came with",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  private readonly proxySeconds = new Histogram({
    name: "tlsproof_proxy_duration_seconds",
    help: "/proxy calls from the request to the target's answer (or the error), by proof mode, MPC session size class and result",
    labelNames: ["mode", "size", "result"],
    buckets: SESSION_SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly setupSeconds = new Histogram({
    name: "tlsproof_session_setup_duration_seconds",
    help: "MPC session setups with the notary (warm pool and on demand), by session size class and result",
    labelNames: ["size", "result"],
    buckets: SESSION_SECONDS_BUCKETS,
    registers: [this.registry],
  });
  /** Store operations by operation and result (ok or error). */
  readonly storeOperations = new Counter({
    name: "tlsproof_store_operations_total",
    help: "Message store and request-id record operations, by operation (read, write) and result",
    labelNames: ["operation", "kind", "result"],
    registers: [this.registry],
  });

  constructor(sources: ProverSources) {
    const { registry } = this;
    readGauge(registry, "tlsproof_pool_ready_sessions", "Warm sessions set up and waiting", () => sources.pool().ready);
    readGauge(registry, "tlsproof_pool_in_use_sessions", "Warm-pool sessions handed to requests and still running", () => sources.pool().inUse);
    readGauge(registry, "tlsproof_pool_warming_sessions", "Warm sessions being set up", () => sources.pool().warming);
    readGauge(registry, "tlsproof_setups_running", "MPC setups requests wait for, running (on demand, or a refill a request joined)", () => sources.pool().setups.running);
    readGauge(registry, "tlsproof_setups_waiting", "Requests waiting for their turn to set up a session (PROVER_CONCURRENT_SETUPS)", () => sources.pool().setups.waiting);
    readGauge(registry, "tlsproof_exchanges_running", "Exchanges with targets running over MPC-TLS", () => sources.exchanges().running);
    readGauge(registry, "tlsproof_exchanges_waiting", "Requests holding a session, waiting for their turn to exchange with their target (PROVER_CONCURRENT_EXCHANGES)", () => sources.exchanges().waiting);
    readGauge(registry, "tlsproof_pool_failures_in_a_row", "Warm-session setups that failed in a row (0 once one succeeds)", () => sources.pool().failures);
    readCounter(registry, "tlsproof_pool_served_total", "Sessions handed to requests, by where they came from", "from", () => sources.pool().served);
    readGauge(registry, "tlsproof_live_sessions", "MPC sessions running for /proxy calls", sources.liveSessions);
    readGauge(registry, "tlsproof_proxy_mode_sessions", "Proxy-mode proofs running for /proxy calls (PROVER_PROXY_MAX_SESSIONS)", sources.proxyModeSessions);
    readGauge(registry, "tlsproof_engine_memory_bytes", "The MPC engines' wasm memory, summed over the engine hosts", sources.engineBytes);
    readGauge(registry, "tlsproof_process_resident_memory_bytes", "Resident memory of the prover process", sources.rssBytes);
    readGauge(registry, "tlsproof_engine_hosts", "Engine host processes running (retiring ones included)", () => sources.engineHosts().running);
    readGauge(registry, "tlsproof_engine_hosts_resident_memory_bytes", "Resident memory of the engine host processes together", () => sources.engineHosts().rssBytes);
    readCounter(registry, "tlsproof_engine_hosts_replaced_total", "Engine hosts replaced, by reason: a call on them hung, or they died", "reason", () => ({
      ...sources.engineHosts().replaced,
    }));
    readGauge(registry, "tlsproof_sse_subscribers", "Open proof streams (/proof subscribers)", sources.sseSubscribers);
    readGauge(registry, "tlsproof_embedded_notary_sessions", "The embedded notary's open sessions (-1 with a remote notary)", () => sources.notarySessions() ?? -1);
  }

  /** Every settled request id, once: a proof, or the code no proof came with. */
  settled(outcome: "proof" | ErrorCode): void {
    this.proofs.inc({ outcome });
  }

  /** Times a /proxy call; call the result with its result when it ends. A call of a mode without sessions to size has no size label. */
  proxyTimer(call: ProxyCallKind): (result: "answered" | "failed") => void {
    const end = this.proxySeconds.startTimer(call.sizes ? { mode: call.mode, size: sizeClass(call.sizes) } : { mode: call.mode });
    return (result) => end({ result });
  }

  /** Times one MPC session setup; a refill's time paused for live work is not counted. */
  async timeSetup<T>(sizes: SessionSizes, setup: () => Promise<T>, background?: BackgroundWork): Promise<T> {
    const started = performance.now();
    const end = (result: "ok" | "failed") =>
      this.setupSeconds.observe({ size: sizeClass(sizes), result }, (performance.now() - started - (background?.pausedMs() ?? 0)) / 1000);
    try {
      const session = await setup();
      end("ok");
      return session;
    } catch (error) {
      end("failed");
      throw error;
    }
  }
}
