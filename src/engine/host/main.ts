/**
 * An engine host: a process of this same binary that holds one wasm instance and runs provers, and an embedded
 * notary's Verifiers, for its parent (protocol.ts). Its memory is its own: when it hangs, the parent ends it and the memory comes back.
 */
import { AppError, errorText } from "../../core/errors.ts";
import { LocalProver } from "../prover.ts";
import { LocalVerifier } from "../verifier.ts";
import { countEngineSockets, engineSocketStats } from "../socket-stats.ts";
import { type EngineOptions, engineMemoryBytes, startEngine } from "../wasm.ts";
import { dieWithParent } from "./parent-death.ts";
import type { HostCommand, HostReply } from "./protocol.ts";

const MEMORY_REPORT_MS = 1_000;
const memory = () => ({ engineBytes: engineMemoryBytes(), rssBytes: process.memoryUsage.rss() });

type Reply = (message: HostReply) => void;
type Answered = Pick<HostReply & { kind: "done" }, "exchange" | "verified" | "sockets" | "diesWithParent">;
/** A command on the host's wasm objects. */
type ObjectCommand = Exclude<HostCommand, { kind: "start" | "sockets" }>;

/** Answers a call once: `done` with what `work` gave, or `failed` with its error's words. */
async function answer(reply: Reply, call: number, work: () => Promise<Answered | void>) {
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

/** The host's provers and Verifiers, by the parent's numbers, and the commands on them. */
function hostObjects(reply: Reply): (command: ObjectCommand) => void {
  const provers = new Map<number, LocalProver>();
  const verifiers = new Map<number, LocalVerifier>();
  const proverOf = (id: number) => find(provers, id, "prover");
  const verifierOf = (id: number) => find(verifiers, id, "verifier");
  return (command) => {
    switch (command.kind) {
      case "create":
        return void provers.set(command.prover, new LocalProver(command.serverName, command.sizes));
      case "setup":
        return void answer(reply, command.call, () => proverOf(command.prover).setup(command.notarizeUrl));
      case "send":
        return void answer(reply, command.call, async () => ({ exchange: await proverOf(command.prover).sendRequest(command.tcpUrl, command.request) }));
      case "reveal":
        return void answer(reply, command.call, () => proverOf(command.prover).reveal(command.revealed));
      case "create-verifier":
        return void verifiers.set(command.verifier, new LocalVerifier(command.sizes));
      case "verify":
        return void answer(reply, command.call, async () => ({
          verified: await verifierOf(command.verifier).verify(command.peerUrl, () => reply({ kind: "connected", call: command.call, memory: memory() })),
        }));
      case "free":
        (provers.get(command.id) ?? verifiers.get(command.id))?.free();
        provers.delete(command.id);
        return void verifiers.delete(command.id);
    }
  };
}

export function runEngineHost(): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) throw new AppError("usage", "cli engine-host runs only as a child process of cli prover start");
  const reply: Reply = (message) => send(message);
  const onObject = hostObjects(reply);
  // Ctrl-C in a terminal signals the whole process group: the prover stops its hosts itself, in order, and a host
  // that died first would be counted and replaced as a crash.
  process.on("SIGINT", () => {});
  countEngineSockets();

  // The engine (its compiled module and thread pool: 0.15 CPU-seconds and 53 MiB a host, measured) starts with the
  // first object placed here, so a prover that proves only in proxy mode never pays for it.
  let engineOptions: EngineOptions | undefined;
  let engine: Promise<unknown> | undefined;
  const engineStarted = () =>
    (engine ??= engineOptions ? startEngine(engineOptions) : Promise.reject(new Error("an engine object was sent before start")));

  process.on("message", (command: HostCommand) => {
    switch (command.kind) {
      case "start":
        engineOptions = { threads: command.threads, testTrustAnchorPem: command.testTrustAnchorPem };
        return void answer(reply, command.call, async () => ({ diesWithParent: dieWithParent() }));
      case "sockets":
        return void answer(reply, command.call, async () => ({ sockets: engineSocketStats(command.search) }));
      default:
        // Callbacks on one promise run in the order they were added: each command still runs after the ones
        // sent before it (a prover is created before its setup).
        return void engineStarted().then(
          () => onObject(command),
          (error: unknown) => {
            if ("call" in command) reply({ kind: "failed", call: command.call, message: `the engine did not start: ${errorText(error)}`, memory: memory() });
          },
        );
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
