import { useBuiltBinary } from "../../testkit/binary.ts";
import { BINARY_CLI } from "../../testkit/prover.ts";
import { pipelineSuite } from "../../testkit/pipeline-suite.ts";

useBuiltBinary();
pipelineSuite("proof pipeline from the compiled binary (dist/cli)", BINARY_CLI, "proxy");
