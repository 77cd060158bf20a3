import { defineCommand } from "citty";
import { runEngineHost } from "../engine/host/main.ts";

/** Started by `cli prover start` only (src/engine/host/protocol.ts); index.ts keeps it out of help and completion. */
export default defineCommand({
  meta: { name: "engine-host", description: "Runs MPC provers for a parent prover process" },
  async run() {
    await runEngineHost();
    process.exit(0);
  },
});
