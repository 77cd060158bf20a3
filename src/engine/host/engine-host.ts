import { fileURLToPath } from "node:url";
import type { Subprocess } from "bun";
import { PausedTime } from "../paused-time.ts";
import { IN_BINARY } from "../../base/binary.ts";
import type { HostCommand, HostMemory, HostReply } from "./protocol.ts";
import { engineHostEnv } from "./host-env.ts";
import { eachLine } from "./engine-log.ts";

type Done = HostReply & { kind: "done" };
/** A command as the caller writes it: the host numbers its calls. */
type Call = HostCommand extends infer C ? (C extends { call: number } ? Omit<C, "call"> : never) : never;
type Post = Exclude<HostCommand, { call: number }>;

/** Inside the compiled binary `cli engine-host` is the binary itself; from source it is index.ts under Bun. */
const hostCommand = (): string[] =>
  IN_BINARY ? [process.execPath, "engine-host"] : [process.execPath, fileURLToPath(new URL("../../../index.ts", import.meta.url)), "engine-host"];

export interface EngineHostOptions {
  threads: number;
  testTrustAnchorPem?: string;
  /** Called once when the process ends, whoever ended it. */
  onExit(host: EngineHost, ended: string): void;
  /** Hears each line the process prints (the engine's log), on stdout or stderr. */
  onOutput(pid: number, line: string): void;
}

/** One engine host process, as its parent sees it: numbered calls over IPC, and the memory it last reported. */
export class EngineHost {
  readonly pid: number;
  memory: HostMemory = { engineBytes: 0, rssBytes: 0 };
  /** Set once the process has ended: calls fail from then on. */
  ended: string | undefined;
  /** While paused the process is stopped: its calls wait, and so do clocks that count only its running time. */
  readonly pausedTime = new PausedTime();
  /** Only a host that the kernel ends with its parent is paused: a stopped one cannot see its channel close. */
  diesWithParent = false;
  /** Whether it answered its start; a host that ends before it never ran. */
  running = false;
  /** Settles when the host has answered its start: rejected (and the host killed) when it did not start. */
  readonly started: Promise<void>;
  private readonly process: Subprocess;
  private readonly calls = new Map<number, { resolve(reply: Done): void; reject(error: Error): void; connected?: () => void }>();
  private nextCall = 1;

  /** Starts a host process and sends it its start. Calls may follow at once: the host reads them after its start. */
  constructor(options: EngineHostOptions) {
    this.process = Bun.spawn({
      cmd: hostCommand(),
      env: engineHostEnv(process.env),
      stdio: ["ignore", "pipe", "pipe"],
      serialization: "advanced",
      ipc: (reply: HostReply) => this.receive(reply),
      onExit: (_process, exitCode, signalCode) => {
        const ended = signalCode ? `ended by ${signalCode}` : `exited with code ${exitCode}`;
        this.ended = ended;
        this.pausedTime.resume();
        const error = new Error(`the engine host stopped (${ended})`);
        for (const pending of this.calls.values()) pending.reject(error);
        this.calls.clear();
        options.onExit(this, ended);
      },
    });
    this.pid = this.process.pid;
    for (const stream of [this.process.stdout, this.process.stderr]) {
      if (stream instanceof ReadableStream) eachLine(stream, (line) => options.onOutput(this.pid, line));
    }
    this.started = this.call({ kind: "start", threads: options.threads, testTrustAnchorPem: options.testTrustAnchorPem }).then(
      (started) => {
        this.diesWithParent = started.diesWithParent === true;
        this.running = true;
      },
      (error: unknown) => {
        this.kill();
        throw error;
      },
    );
  }

  /** Sends a call; `connected` hears a Verifier's `connected` before the call's answer. */
  call(command: Call, connected?: () => void): Promise<Done> {
    if (this.ended) return Promise.reject(new Error(`the engine host stopped (${this.ended})`));
    const call = this.nextCall++;
    return new Promise<Done>((resolve, reject) => {
      this.calls.set(call, { resolve, reject, connected });
      this.process.send({ ...command, call } as HostCommand);
    });
  }

  /** A command that gets no answer; dropped once the host has ended. */
  post(command: Post): void {
    if (!this.ended) this.process.send(command);
  }

  /**
   * Stops the process (SIGSTOP): its threads give the cores up; what it is sent waits in its pipe. Nothing
   * happens to a host that would outlive its parent stopped.
   */
  pause(): void {
    if (this.ended || this.pausedTime.paused || !this.diesWithParent) return;
    this.process.kill("SIGSTOP");
    this.pausedTime.pause();
  }

  resume(): void {
    if (!this.pausedTime.paused) return;
    if (!this.ended) this.process.kill("SIGCONT");
    this.pausedTime.resume();
  }

  /** Ends the process at once: a hung engine cannot be asked to stop. */
  kill(): void {
    if (!this.ended) this.process.kill("SIGKILL");
  }

  exited(): Promise<number> {
    return this.process.exited;
  }

  private receive(reply: HostReply) {
    this.memory = reply.memory;
    if (reply.kind === "memory") return;
    const pending = this.calls.get(reply.call);
    if (!pending) return;
    if (reply.kind === "connected") return pending.connected?.();
    this.calls.delete(reply.call);
    if (reply.kind === "done") pending.resolve(reply);
    else pending.reject(new Error(reply.message));
  }
}
