/** MPC mode's part of the notary protocol (notary.ts): what its session request carries. */
import * as v from "valibot";
import { SessionSizes } from "../core/session-sizes.ts";

/** A session of these sizes. `clientType` is what TLSNotary's clients send ("Websocket"); it is accepted and ignored. */
export const SessionRequest = v.strictObject({ clientType: v.optional(v.string()), ...SessionSizes.entries });
export type SessionRequest = v.InferOutput<typeof SessionRequest>;
