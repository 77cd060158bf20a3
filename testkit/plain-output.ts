/**
 * Preloaded by `bun test` (bunfig.toml): commands run in process print their help as into a pipe, whatever terminal
 * the tests run in (citty decides on colour once, when it loads; src/cli/plain-output.ts does this for the entry).
 */
process.env.NO_COLOR = "1";
