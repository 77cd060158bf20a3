import { SOURCE_CLI } from "../../testkit/prover.ts";
import { pipelineSuite } from "../../testkit/pipeline-suite.ts";

pipelineSuite("proof pipeline from source (bun index.ts)", SOURCE_CLI, "mpc");
