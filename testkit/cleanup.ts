/** Preloaded by `bun test` (bunfig.toml): once every test file has run, the folders the tests made are removed. */
import { afterAll } from "bun:test";
import { removeMadeFolders } from "./env.ts";

afterAll(removeMadeFolders);
