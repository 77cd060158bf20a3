/** `PROVER_*` settings given to a bench itself (an A/B of one setting): every prover it starts gets them last. */
export const BENCH_PROVER_ENV = Object.fromEntries(
  Object.entries(process.env).filter((entry): entry is [string, string] => entry[0].startsWith("PROVER_") && entry[1] !== undefined),
);
