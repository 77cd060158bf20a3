/**
 * An engine host: a process of this same binary that holds one wasm instance and runs provers, and an embedded
 * notary's Verifiers, for its parent (protocol.ts). Its memory is its own: when it hangs, the parent ends it and the memory comes back.
 */
import { AppError, errorText } from "../../core/errors.ts";
import { LocalProver } from "../prover.ts";
import { LocalVerifier } from "../verifier.ts";
import { countEngineSockets, engineSocketStats } from "../socket-stats.ts";
import { engineMemoryBytes, startEngine } from "../wasm.ts";
import { dieWithParent } from "./parent-death.ts";
import type { HostCommand, HostReply } from "./protocol.ts";

const MEMORY_REPORT_MS = 1_000;
const memory = () => ({ engineBytes: engineMemoryBytes(), rssBytes: process.memoryUsage.rss() });

export function runEngineHost(): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new AppError("usage", "cli engine-host runs only as a child process of cli prover start");
  const provers = new Map<number, LocalProver>();
  const verifiers = new Map<number, LocalVerifier>();
  const reply = (message: HostReply) => send(message);
  // Ctrl-C in a terminal signals the whole process group: the prover stops its hosts itself, in order, and a host
  // that died first would be counted and replaced as a crash.
  process.on("SIGINT", () => {});
  countEngineSockets();

  async function answer(call: number, work: () => Promise<Pick<HostReply & { kind: "done" }, "exchange" | "verified" | "sockets" | "diesWithParent"> | void>) {
    try {
      const value = (await work()) ?? {};
      reply({ kind: "done", call, ...value, memory: memory() });
    } catch (error) {
      reply({ kind: "failed", call, message: errorText(error), memory: memory() });
    }
  }

  function find<T>(objects: Map<number, T>, id: number, what: string): T {
    const found = objects.get(id);
    if (!found) throw new Error(`no ${what} ${id} in this engine host`);
    return found;
  }
  const proverOf = (id: number) => find(provers, id, "prover");
  const verifierOf = (id: number) => find(verifiers, id, "verifier");

  process.on("message", (command: HostCommand) => {
    switch (command.kind) {
      case "start":
        return void answer(command.call, async () => {
          await startEngine({ threads: command.threads, testTrustAnchorPem: command.testTrustAnchorPem });
          return { diesWithParent: dieWithParent() };
        });
      case "create":
        return void provers.set(command.prover, new LocalProver(command.serverName, command.sizes));
      case "setup":
        return void answer(command.call, () => proverOf(command.prover).setup(command.notarizeUrl));
      case "send":
        return void answer(command.call, async () => ({ exchange: await proverOf(command.prover).sendRequest(command.tcpUrl, command.request) }));
      case "reveal":
        return void answer(command.call, () => proverOf(command.prover).reveal(command.revealed));
      case "create-verifier":
        return void verifiers.set(command.verifier, new LocalVerifier(command.sizes));
      case "verify":
        return void answer(command.call, async () => ({
          verified: await verifierOf(command.verifier).verify(command.peerUrl, () => reply({ kind: "connected", call: command.call, memory: memory() })),
        }));
      case "sockets":
        return void answer(command.call, async () => ({ sockets: engineSocketStats(command.search) }));
      case "free":
        (provers.get(command.id) ?? verifiers.get(command.id))?.free();
        provers.delete(command.id);
        return void verifiers.delete(command.id);
    }
  });
  const report = setInterval(() => reply({ kind: "memory", memory: memory() }), MEMORY_REPORT_MS);
  // The parent is gone (or let go): nothing else can use this engine.
  return new Promise<void>((resolve) =>
    process.on("disconnect", () => {
      clearInterval(report);
      resolve();
    }),
  );
}
