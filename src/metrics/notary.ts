/** The notary's metrics: its sessions, their failures, and the proofs it signs. */
import { Counter, Histogram, newRegistry, readGauge } from "./registry.ts";

export interface NotarySources {
  activeSessions(): number;
  /** Sessions that ended without a verification, since start. */
  failedSessions(): number;
}

export class NotaryMetrics {
  readonly registry = newRegistry();
  private readonly created = new Counter({
    name: "tlsproof_notary_sessions_created_total",
    help: "Notary sessions created (POST /session)",
    registers: [this.registry],
  });
  private readonly attestations = new Counter({
    name: "tlsproof_notary_attestations_total",
    help: "Attestation requests: result is signed, or the error code of the refusal",
    labelNames: ["result"],
    registers: [this.registry],
  });
  private readonly proxyRefusals = new Counter({
    name: "tlsproof_notary_proxy_refusals_total",
    help: "Proxy sessions refused or their relay ended early: reason is over_capacity, connects_pending, first_flight (not a ClientHello for the session's server), idle or lifetime",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  private readonly signingSeconds = new Histogram({
    name: "tlsproof_notary_signing_duration_seconds",
    help: "Building and signing one proof (tlsproof/1 signature and EVM attestation)",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [this.registry],
  });

  constructor(sources: NotarySources) {
    readGauge(this.registry, "tlsproof_notary_active_sessions", "Notary sessions open now", sources.activeSessions);
    new Counter({
      name: "tlsproof_notary_session_failures_total",
      help: "Notary sessions that ended without a verification (the prover never connected or went away, a timeout, a broken MPC run)",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(sources.failedSessions());
      },
    });
  }

  sessionCreated(): void {
    this.created.inc();
  }

  /** `reason`: one of src/notary/proxy-mode/places.ts's ProxyRefusal labels. */
  proxyRefused(reason: string): void {
    this.proxyRefusals.inc({ reason });
  }

  attestation(result: "signed" | string): void {
    this.attestations.inc({ result });
  }

  /** Runs the signing step, timed. */
  timeSigning<T>(sign: () => T): T {
    const end = this.signingSeconds.startTimer();
    try {
      return sign();
    } finally {
      end();
    }
  }
}
