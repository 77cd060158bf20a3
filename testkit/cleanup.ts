/**
 * Preloaded by `bun test` (bunfig.toml): once every test file has run, the run's own PostgreSQL cluster is stopped
 * and the folders the tests made are removed.
 */
import { afterAll } from "bun:test";
import { removeMadeFolders } from "./env.ts";
import { stopTestPostgres } from "./postgres.ts";

afterAll(async () => {
  await stopTestPostgres();
  removeMadeFolders();
});
