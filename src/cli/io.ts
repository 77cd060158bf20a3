/**
 * A command's standard streams: the process's own, or, for a command run in process (tests), text buffers.
 * runCli sets them for the whole run; a command reaches them with `cliIo()` wherever its output is written.
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface CliOutput {
  /** A terminal, and its width: help is fitted to it. */
  readonly isTTY?: boolean;
  readonly columns?: number;
  /** Resolves once the text is written whole: a large report must not be cut at a pipe's buffer by the exit. */
  write(text: string): Promise<unknown>;
}

export interface CliIo {
  stdout: CliOutput;
  stderr: CliOutput;
  /** Standard input read to its end, as text. */
  readStdin(): Promise<string>;
}

const processOutput = (stream: NodeJS.WriteStream, file: typeof Bun.stdout): CliOutput => ({
  get isTTY() {
    return stream.isTTY;
  },
  get columns() {
    return stream.columns;
  },
  write: (text) => Bun.write(file, text),
});

export const processIo: CliIo = {
  stdout: processOutput(process.stdout, Bun.stdout),
  stderr: processOutput(process.stderr, Bun.stderr),
  readStdin: () => Bun.stdin.text(),
};

const current = new AsyncLocalStorage<CliIo>();

/** The streams of the command running now: the process's unless runCli was given others. */
export const cliIo = (): CliIo => current.getStore() ?? processIo;

export const withCliIo = <T>(io: CliIo, run: () => Promise<T>): Promise<T> => current.run(io, run);
