/**
 * Proving by MPC-TLS (src/prover/proving/mode.ts): a session sized for the exchange, from the warm pool or set up
 * on demand; the exchange over it in turns; the reveal over the same session. The notary sees nothing in clear.
 */
import { AppError } from "../../core/errors.ts";
import type { SessionSizes } from "../../core/session-sizes.ts";
import { hostOf } from "../../core/target.ts";
import { BUILT_IN_MODES } from "../../proof/modes.ts";
import { withinLimits } from "../exchange/requested-sizes.ts";
import type { ProvingMode } from "../proving/mode.ts";
import { endpointKey, planSession, requestBytes } from "./pool/size-classes.ts";
import { checkMpcRequest } from "./request-layout.ts";
import { MpcRun, type MpcRunDeps } from "./session-run.ts";
import { MPC_HEADERS } from "./headers.ts";
import { engineSuiteCheck } from "./mpc-probe.ts";
import type { ProvingContext, ProvingModeBackend } from "../proving/registry.ts";

/** What MPC mode is made with beside the prover's context: its warm pool and turns, its places, its limits. */
export type MpcModeParts = Omit<MpcRunDeps, keyof ProvingContext | "engineSuite"> & {
  /** The longest a call may take, its proof included (PROVER_SESSION_TIMEOUT). */
  sessionTimeoutMs: number;
  /** A GET whose answer overflowed its session is repeated once in a class that fits. */
  repeatTooLarge: boolean;
};

type MpcModeDeps = MpcModeParts & MpcRunDeps;

/** MPC's backend: made, as every mode is, with the prover's context. */
export const mpcBackend = (parts: MpcModeParts): ProvingModeBackend => ({
  facts: BUILT_IN_MODES.mpc,
  create: (context) => mpcProvingMode({ ...parts, ...context, engineSuite: engineSuiteCheck(context.trustAnchorsPem) }),
});

function mpcProvingMode(deps: MpcModeDeps): ProvingMode {
  return {
    facts: BUILT_IN_MODES.mpc,
    headers: MPC_HEADERS,
    prepare(call) {
      checkMpcRequest(call.exchange, call.patterns);
      const announced: Partial<SessionSizes> = withinLimits(call.announced, deps.sessions.limits);
      const { method, pathAndQuery } = call.exchange;
      const endpoint = endpointKey(hostOf(call.target), method, pathAndQuery);
      const canRepeat = method === "GET" && deps.repeatTooLarge;
      const need = planSession({
        classes: deps.sessions.classes,
        defaultClass: deps.sessions.defaultClass,
        announced,
        requestBytes: requestBytes(call.exchange),
        learnedRecv: deps.endpointSizes.expected(endpoint),
        canRepeat,
      });
      return {
        deadlineMs: deps.sessionTimeoutMs,
        sizes: need.class,
        start: (control) => new MpcRun(deps, control, call, { need, endpoint, canRepeat }),
      };
    },
  };
}
