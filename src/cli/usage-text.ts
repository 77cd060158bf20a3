/**
 * citty's usage, fitted to the reader's terminal: citty pads every option line to the longest one and never wraps,
 * so a long description made lines of some 200 columns. Trailing padding goes; a line wider than the terminal is
 * wrapped at spaces, its continuation lines indented to where its description starts.
 */
import { type CommandDef, renderUsage } from "citty";

/** The width to fit: the terminal's, else 100 columns (a pipe or a file). */
export const usageWidth = (stream: { columns?: number; isTTY?: boolean }): number => (stream.isTTY && stream.columns ? Math.max(40, stream.columns) : 100);

/** Where a line's description starts: after its indent and first word (the option), at the next run of 2+ spaces. */
function descriptionColumn(line: string): number {
  const match = /^(\s*\S+(?: \S+)*?)( {2,})\S/.exec(line);
  return match ? match[1]!.length + match[2]!.length : line.length - line.trimStart().length;
}

/** One line wrapped at spaces to `width`, continuation lines indented to its description. */
function wrapLine(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const indent = " ".repeat(Math.min(descriptionColumn(line), Math.floor(width / 2)));
  const lines: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const cut = rest.lastIndexOf(" ", width);
    const at = cut > indent.length ? cut : rest.indexOf(" ", width);
    if (at < 0) break;
    lines.push(rest.slice(0, at).trimEnd());
    rest = indent + rest.slice(at + 1).trimStart();
  }
  lines.push(rest);
  return lines;
}

/** Usage text fitted to `width` columns. */
export function fitUsage(text: string, width: number): string {
  return text
    .split("\n")
    .flatMap((line) => wrapLine(line.trimEnd(), width))
    .join("\n");
}

/** The command's usage, fitted to `stream` (stdout for help asked, stderr after a usage error). */
export async function usageFor(cmd: CommandDef, parent: CommandDef | undefined, stream: { columns?: number; isTTY?: boolean }): Promise<string> {
  return fitUsage(await renderUsage(cmd, parent), usageWidth(stream));
}
