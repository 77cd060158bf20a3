/**
 * `cli demo` (`npm run demo`): the whole product on one machine, offline. A test CA (`cli testca`'s), a local HTTPS
 * API with a certificate from it, and a prover with its embedded notary trusting it (`cli prover start`'s server,
 * in this process) prove one GET in proxy mode and one in MPC mode through the client's prove(); each proof is
 * then checked again with the code of `cli verify` and its report printed, with a link to the prover's viewer.
 * Everything runs until Ctrl-C (SIGINT or SIGTERM), which stops all of it: the servers, the engine host processes,
 * and the temporary folder (unless --dir named one to keep).
 */
import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "demo", description: "Prove one GET in each mode against a local HTTPS API, offline; runs until Ctrl-C" },
  args: {
    port: { type: "string", default: "0", description: "The prover's port (default: any free one)" },
    dir: { type: "string", valueHint: "dir", description: "Keep the demo's files (test CA, notary key, proofs) in this folder (default: a temporary one, removed at the end)" },
  },
  async run({ args }) {
    // Loaded when run: help and completion list this command without loading the prover, the engine or the client.
    await (await import("./demo-run.ts")).runDemo(args);
  },
});
