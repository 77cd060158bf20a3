/**
 * Imported first by the entry: citty decides once, when it loads, whether help is coloured, and only from
 * NO_COLOR/TERM/CI. Help piped into a file or `less` must not carry escape codes, so a standard output that
 * is not a terminal turns colour off before citty loads.
 */
if (!process.stdout.isTTY) process.env.NO_COLOR = "1";
