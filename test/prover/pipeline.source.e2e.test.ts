import { SOURCE_CLI } from "../support/prover.ts";
import { pipelineSuite } from "../support/pipeline-suite.ts";

pipelineSuite("proof pipeline from source (bun index.ts)", SOURCE_CLI);
