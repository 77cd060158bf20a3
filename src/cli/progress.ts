/**
 * A progress line for a long wait (`cli prove`): redrawn each second on a terminal, nothing at all when the
 * stream is a pipe or a file (a script's log gets no carriage returns).
 */
export interface Progress {
  /** The target answered: from now on the line waits for the proof. */
  answered(status: number): void;
  /** Removes the line, before other output goes to the terminal. */
  clear(): void;
  /** Replaces the line with a last one (terminal only). */
  done(text: string): void;
  stop(): void;
}

interface Terminal {
  isTTY?: boolean;
  write(text: string): boolean;
}

export function progressLine(stream: Terminal, mode: string): Progress {
  if (!stream.isTTY) return { answered() {}, clear() {}, done() {}, stop() {} };
  const started = Date.now();
  let stage = `proving (${mode}): waiting for the target's answer`;
  let shown = false;
  const draw = () => {
    stream.write(`\r\x1b[2K${stage}… ${Math.round((Date.now() - started) / 1000)} s`);
    shown = true;
  };
  const timer = setInterval(draw, 1000);
  draw();
  const clear = () => {
    if (shown) stream.write("\r\x1b[2K");
    shown = false;
  };
  return {
    answered(status) {
      stage = `proving (${mode}): the target answered ${status}; waiting for the proof`;
    },
    clear,
    done(text) {
      clear();
      stream.write(`${text}\n`);
    },
    stop() {
      clearInterval(timer);
    },
  };
}
