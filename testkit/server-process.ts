/**
 * Server processes the tests start (openssl s_server, Python's and Node's TLS servers), reading the port each
 * prints. Each dies with the test process, even one killed (SIGKILL, a stopped `bun test --bail`), where no exit
 * handler runs: it is started under `setpriv --pdeathsig KILL`, the kernel's parent-death signal that
 * src/engine/host/parent-death.ts sets in an engine host, here set before exec since the server is not our code.
 */
import { collectText } from "./prover.ts";
import { waitUntil } from "./wait.ts";

/** `command` run so that the kernel kills it when the process that starts it dies (Linux, util-linux's setpriv). */
export const dyingWithParent = (command: readonly string[]): string[] => ["setpriv", "--pdeathsig", "KILL", "--", ...command];

export interface ServerProcess {
  /** The server's own pid (setpriv execs it). */
  pid: number;
  port: number;
  /** Everything it printed on stdout so far. */
  output(): string;
  /** Writes to its stdin. */
  write(text: string): void;
  stop(): Promise<void>;
}

/** Starts `command`, reads its stdout, and resolves once `portOf` finds its port there. */
export async function startServerProcess(command: string[], portOf: (output: string) => number | undefined, cwd?: string): Promise<ServerProcess> {
  const child = Bun.spawn(dyingWithParent(command), { cwd, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  // Both pipes read to their end, so that a server logging every connection never blocks on a full one.
  const output = collectText(child.stdout);
  const errors = collectText(child.stderr);
  const port = await waitUntil(`${command[0]} to listen`, () => portOf(output()), (p) => p !== undefined, 30_000, {
    hopeless: () => (child.exitCode !== null ? `it exited with ${child.exitCode}` : undefined),
    intervalMs: 20,
    context: () => errors().slice(-4096),
  });
  return {
    pid: child.pid,
    port: port!,
    output,
    write(text) {
      child.stdin.write(text);
      child.stdin.flush();
    },
    stop: async () => {
      child.kill();
      await child.exited;
    },
  };
}
