/**
 * Text from others (a target's answer, a proof file's fields, a prover's error message) made safe to show: on a
 * terminal, a control character can move the cursor, recolour or erase what was printed before (ANSI escapes, C1
 * controls such as U+009B CSI), and bidirectional or invisible format characters can make bytes read in another
 * order or hide them (`5 000 100` shown as `100 000 5`). Every such character is written as `\uNNNN`
 * (`\u{NNNNN}` beyond the BMP), so what is shown is what is there. One table for the CLI, the report and the viewer.
 */

/** C0 and C1 controls and DEL (Cc), format characters (Cf: bidi marks, embeddings, isolates, zero-width, BOM, tags), line and paragraph separators. */
const UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/** A character as its escape: `\u001b`, `\u202e`, `\u{e0041}`. */
export function escapedCharacter(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** Text cut where unsafe characters stand, each of them a piece of its own (CR LF a line break, as in terminalText): for a page that marks them. */
export function unsafePieces(text: string): { text: string; unsafe: boolean }[] {
  return text
    .replaceAll("\r\n", "\n")
    .split(/([\p{Cc}\p{Cf}\u2028\u2029])/u)
    .filter((piece) => piece !== "")
    .map((piece) => ({ text: piece, unsafe: piece.match(UNSAFE) !== null && piece !== "\n" && piece !== "\t" }));
}

/** Text for one line of output: every unsafe character escaped, line breaks included. */
export const terminalLine = (text: string): string => text.replace(UNSAFE, escapedCharacter);

/** Text of several lines: as terminalLine, but a line feed (alone or after CR) stays a line break; tabs stay tabs. */
export const terminalText = (text: string): string =>
  text.replaceAll("\r\n", "\n").replace(UNSAFE, (char) => (char === "\n" || char === "\t" ? char : escapedCharacter(char)));

/** What JSON.stringify leaves raw in strings but a terminal acts on: DEL, C1, format characters, separators. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\p{Cf}\u2028\u2029]/gu;

/**
 * JSON text with those characters as JSON escapes (JSON.stringify escapes C0 itself): the same value for a
 * parser, nothing active for a terminal. Outside strings JSON holds none of them.
 */
export const jsonSafe = (json: string): string =>
  json.replace(UNSAFE_IN_JSON, (char) => char.split("").map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`).join(""));
