/**
 * The wire format between a prover process and its engine hosts (`cli engine-host`), over Bun's IPC channel
 * with structured-clone serialisation (byte arrays cross as they are).
 *
 * The parent numbers the wasm objects it places in a host, provers (`prover`) and an embedded notary's Verifiers
 * (`verifier`), from one counter, and its calls (`call`). Every call is answered exactly once, by `done` or
 * `failed`; `create`, `create-verifier` and `free` are not answered. Each answer carries the host's memory, and a host
 * also reports it every second (`memory`), so the parent always knows it without asking. A host ends when
 * its channel closes, or, once it has said so in its answer to `start` (`diesWithParent`), when its parent dies.
 * `start` gives the engine's options; the engine itself starts with the first wasm object placed in the host.
 */
import type { SessionSizes } from "../../core/session-sizes.ts";
import type { ExchangeRequest } from "../../core/exchange.ts";
import type { EngineExchange, RevealedRanges } from "../prover.ts";
import type { EngineSocketStats } from "../socket-stats.ts";
import type { VerifierOutput } from "../verifier.ts";

export type HostCommand =
  | { kind: "start"; call: number; threads: number; testTrustAnchorPem?: string }
  | { kind: "create"; prover: number; serverName: string; sizes: SessionSizes }
  | { kind: "setup"; call: number; prover: number; notarizeUrl: string }
  | { kind: "send"; call: number; prover: number; tcpUrl: string; request: ExchangeRequest }
  | { kind: "reveal"; call: number; prover: number; revealed: RevealedRanges }
  | { kind: "create-verifier"; verifier: number; sizes: SessionSizes }
  /** Answered once by `connected` (the Verifier reads its socket) before its `done` or `failed`. */
  | { kind: "verify"; call: number; verifier: number; peerUrl: string }
  /** Frees a prover or a Verifier. */
  | { kind: "free"; id: number }
  /** The engine's open sockets whose URL names `search` (a notary session id): what each carried. */
  | { kind: "sockets"; call: number; search: string };

export interface HostMemory {
  /** The wasm instance's linear memory (it only grows, up to 4 GiB). */
  engineBytes: number;
  rssBytes: number;
}

export type HostReply =
  | {
      kind: "done";
      call: number;
      exchange?: EngineExchange;
      verified?: VerifierOutput;
      sockets?: EngineSocketStats[];
      /** Answering `start`: the kernel ends the host with its parent, so it may be paused (parent-death.ts). */
      diesWithParent?: boolean;
      memory: HostMemory;
    }
  | { kind: "failed"; call: number; message: string; memory: HostMemory }
  | { kind: "connected"; call: number; memory: HostMemory }
  | { kind: "memory"; memory: HostMemory };
