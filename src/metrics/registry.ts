/**
 * Prometheus metrics (prom-client), one registry per server, all names prefixed `tlsproof_`. Counts that a
 * component already keeps (pool, slots, subscribers) are read when scraped, not duplicated.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { SessionSizes } from "../core/session-sizes.ts";

/** A size class label: `<max sent>x<max recv>` bytes, as sessions are sized. */
export const sizeClass = (sizes: SessionSizes): string => `${sizes.maxSentData}x${sizes.maxRecvData}`;

/** Seconds: MPC setups and proofs take from under a second (warm) to minutes (large, loaded machine). */
export const SESSION_SECONDS_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

export const newRegistry = (): Registry => new Registry();

/** A gauge whose value is read from `read` at each scrape. */
export function readGauge(registry: Registry, name: string, help: string, read: () => number): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** A counter of a total some component keeps itself, read at each scrape, per label value. */
export function readCounter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  label: L,
  read: () => Record<string, number>,
): Counter<L> {
  return new Counter<L>({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      this.reset();
      for (const [value, count] of Object.entries(read())) this.inc({ [label]: value } as Record<L, string>, count);
    },
  });
}

export { Counter, Gauge, Histogram, Registry };
