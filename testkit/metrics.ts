import { type PromMetrics, getMetricsFromIterator } from "prom2javascript";

/** GET /metrics of a running prover or notary, read with a Prometheus text-format parser. */
export async function scrapeMetrics(baseUrl: string, headers: Record<string, string> = {}): Promise<PromMetrics> {
  const response = await fetch(`${baseUrl}/metrics`, { headers });
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${await response.text()}`);
  const type = response.headers.get("content-type") ?? "";
  if (!type.startsWith("text/plain; version=0.0.4")) throw new Error(`GET /metrics answered ${type}, not the Prometheus text format`);
  return await getMetricsFromIterator((await response.text()).split("\n")[Symbol.iterator]());
}

/**
 * The value of the gauge or counter sample (a histogram's count) whose labels include `labels`; undefined
 * when there is none.
 */
export function sample(families: PromMetrics, name: string, labels: Record<string, string> = {}): number | undefined {
  const data: { labels: Record<string, string>; value?: number; count?: number }[] = families[name]?.data ?? [];
  const found = data.find((metric) => Object.entries(labels).every(([key, value]) => metric.labels[key] === value));
  return found === undefined ? undefined : (found.value ?? found.count);
}
