/**
 * Entry of the bench's bare-engine processes (`scripts/bench-proof.ts` starts them): the engine's threads start
 * from our worker entry, as in the product (src/engine/spawn-snippet.ts), so that bare sessions and the product's
 * differ only in what the product adds. Then bench-proof.ts runs as the child its arguments name.
 */
import { redirectSpawnSnippet } from "../src/engine/spawn-snippet.ts";

redirectSpawnSnippet();
await import("./bench-proof.ts");
