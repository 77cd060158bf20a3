/**
 * A stand-in prover for tests that kill it: starts one engine host as its child, prints the host's pid as JSON,
 * then waits to be killed.
 */
import { EngineHosts } from "../src/engine/host/engine-hosts.ts";
import { createLogger } from "../src/base/log.ts";

const hosts = new EngineHosts({
  count: 1,
  embeddedNotary: true,
  threads: 1,
  hangMs: 1_000,
  pauseRefills: true,
  log: createLogger({ level: "error" }),
});
await hosts.started();
console.log(JSON.stringify({ host: hosts.status()[0]!.pid, diesWithParent: hosts.status()[0]!.diesWithParent }));
await new Promise(() => {});
