import { defineCommand } from "citty";
import { createLogger } from "../base/log.ts";
import { loadProverConfig, proverSettings } from "../prover/config.ts";
import { listening, untilSignalled } from "./serve.ts";
import { LIBSECP256K1_BUILD } from "../core/secp256k1/libsecp256k1.ts";

const start = defineCommand({
  meta: {
    name: "start",
    description: `Start the proving proxy, configured by PROVER_* environment variables (docs/prover.md says what each does; a misspelt one stops start-up naming the closest). Without PROVER_NOTARY_URL it runs an embedded notary. The settings, with their defaults: ${proverSettings()
      .map((setting) => (setting.default ? `${setting.name}=${setting.default}` : setting.name))
      .join(", ")}.`,
  },
  async run() {
    // Loaded when run: help and completion list this command without loading the server.
    const { startProverServer } = await import("../app/prover.ts");
    const config = loadProverConfig(process.env);
    const log = createLogger({ format: config.log.format, level: config.log.level, fields: { component: "prover" } });
    const server = await listening(`prover on ${config.listen.host}:${config.listen.port}`, () => startProverServer(config, log));
    const stopped = untilSignalled(log, () => server.stop(config.listen.shutdownGraceMs));
    log.info("prover listening", { url: server.url, dataDir: config.dataDir, secp256k1: LIBSECP256K1_BUILD });
    await stopped;
  },
});

export default defineCommand({
  meta: { name: "prover", description: "The proving proxy" },
  subCommands: { start },
});
