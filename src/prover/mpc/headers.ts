/** MPC's own `/proxy` answer headers (src/prover/proving/mode.ts, ModeHeaders): the sessions that carried the exchange. */
import * as v from "valibot";
import type { ModeHeaders } from "../proving/mode.ts";

/** A size class as the answer's headers name it: sent/recv bytes. */
const sessionClass = (description: string) => v.pipe(v.string(), v.regex(/^[0-9]+\/[0-9]+$/), v.description(description));

export const MPC_HEADERS = {
  request: {},
  answer: {
    "T-SESSION-CLASS": sessionClass("MPC: the size class of the session that carried the exchange"),
    "T-SESSION-RETRIED": sessionClass("MPC: the class a GET was repeated in after its answer overflowed the first"),
    "T-LAYOUT-SESSIONS": v.pipe(
      v.string(),
      v.regex(/^[0-9]+$/),
      v.description("MPC: the sessions a GET took until the engine wrote Host before its hidden header values (present when more than one)"),
    ),
  },
} as const satisfies ModeHeaders;
