/** What the soak measures: memory and open descriptors of both processes, the notary's sessions, over time. */
import { notarySessions } from "../../testkit/notary.ts";
import { openFds, rssBytes, treeTotal } from "../../testkit/process.ts";
import type { SoakServers } from "./servers.ts";

export interface Sample {
  atS: number;
  proverRss: number;
  proverFds: number;
  notaryRss: number;
  notaryFds: number;
  notarySessions: number;
}

/** A prover's memory and descriptors include its engine hosts': the MPC sessions live there. */
const proverRss = (pid: number): number => treeTotal(pid, rssBytes);
export const proverFds = (pid: number): number => treeTotal(pid, openFds);

export async function takeSample(servers: SoakServers, startedAt: number): Promise<Sample> {
  return {
    atS: Math.round((Date.now() - startedAt) / 1000),
    proverRss: proverRss(servers.prover.process.pid),
    proverFds: proverFds(servers.prover.process.pid),
    notaryRss: rssBytes(servers.notary.process.pid),
    notaryFds: openFds(servers.notary.process.pid),
    notarySessions: await notarySessions(servers.notary.url),
  };
}

/** Samples every `everyMs` until `stop` fires. */
export async function sampleUntil(servers: SoakServers, startedAt: number, everyMs: number, stop: AbortSignal, into: Sample[]): Promise<void> {
  while (!stop.aborted) {
    into.push(await takeSample(servers, startedAt));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, everyMs);
      stop.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}

export interface Bound {
  figure: string;
  value: string;
  bound: string;
  ok: boolean;
}

export const MiB = 1024 * 1024;
export const mib = (bytes: number): string => `${(bytes / MiB).toFixed(0)} MiB`;

/** Prints the bounds as a fixed-width table. */
export function formatBounds(bounds: Bound[]): string {
  const widths = [6, 36, 16, 22];
  const row = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" ").trimEnd();
  return [row(["result", "figure", "value", "bound"]), ...bounds.map((b) => row([b.ok ? "pass" : "FAIL", b.figure, b.value, b.bound]))].join("\n");
}
