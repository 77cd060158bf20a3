/**
 * A third proof mode, standing in for the next real one (a notary in a trusted enclave): the notary fetches the
 * target's answer itself, over its own TLS connection, and signs what it sent and received, less what the prover
 * declares hidden. What both sides of the mode share: its facts, and its session request.
 */
import * as v from "valibot";
import type { ModeFacts } from "../../../../src/proof/modes.ts";

export const STAND_IN: ModeFacts = {
  name: "stand-in",
  summary: "a stand-in mode: the notary made the TLS connection and the exchange itself",
  notaryDials: true,
  mayHideRequest: false,
  notarySeesAnswer: false,
  evmType: "StandInAttestation",
};

/** The target the notary dials. The request's bytes then go over the mode's socket; its answer comes back there. */
export const StandInSessionRequest = v.strictObject({
  serverName: v.pipe(v.string(), v.minLength(1), v.maxLength(253)),
  port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
});
export type StandInSessionRequest = v.InferOutput<typeof StandInSessionRequest>;
