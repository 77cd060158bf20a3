import { defineCommand } from "citty";
import { createLogger } from "../log.ts";
import { loadProverConfig } from "../prover/config.ts";
import { startProverServer } from "../prover/server.ts";
import { listening, untilSignalled } from "./serve.ts";

const start = defineCommand({
  meta: {
    name: "start",
    description:
      "Start the proving proxy (configured by PROVER_* environment variables; see README). Without PROVER_NOTARY_URL it runs an embedded notary.",
  },
  async run() {
    const config = loadProverConfig(process.env);
    const log = createLogger({ fields: { component: "prover" } });
    const server = await listening(`prover on ${config.host}:${config.port}`, () => startProverServer(config, log));
    log.info("prover listening", { url: server.url, dataDir: config.dataDir });
    await untilSignalled(log, () => server.stop(config.shutdownGraceMs));
  },
});

export default defineCommand({
  meta: { name: "prover", description: "The proving proxy" },
  subCommands: { start },
});
