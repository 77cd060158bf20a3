import { expect, test } from "bun:test";
import { fitUsage, usageWidth } from "../../src/cli/usage-text.ts";

/** Usage fitted to a width: padding trimmed, a long line wrapped at spaces under its description. */

test("a long option line wraps under its description; short lines and padding are left as they are, less the padding", () => {
  const text = ["OPTIONS", "", "  --long=<x>    one two three four five six seven    ", "  --a    short"].join("\n");
  expect(fitUsage(text, 40)).toBe(["OPTIONS", "", "  --long=<x>    one two three four five", "                six seven", "  --a    short"].join("\n"));
  // Never indented past half the width: the description keeps room.
  expect(fitUsage("  --long=<x>    one two three four", 20).split("\n")).toEqual(["  --long=<x>    one", "          two three", "          four"]);
});

test("a word longer than the width is cut at the next space, never lost", () => {
  expect(fitUsage("  --x    aaaaaaaaaaaaaaaaaaaaaaaaaaaaa b", 20)).toBe("  --x    aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n         b");
});

test("the width: a terminal's columns (at least 40), else 100", () => {
  expect(usageWidth({ isTTY: true, columns: 132 })).toBe(132);
  expect(usageWidth({ isTTY: true, columns: 20 })).toBe(40);
  expect(usageWidth({ isTTY: false, columns: 132 })).toBe(100);
  expect(usageWidth({})).toBe(100);
});
