/** What the prover's document says beside its declared routes: its title, and the schemas it names. */
import { proofSchema } from "../proof/proof-schema.ts";
import { ProofStreamError } from "../prover/delivery/routes.ts";
import { publishEntrySchema } from "../store/publish.ts";
import type { ApiDescription } from "./document.ts";

export const proverApi: ApiDescription = {
  title: "tlsproof prover",
  description: "A proving proxy: MPC-TLS, or proxy mode where the notary relays the connection. README.md and docs/api.md have the full contract.",
  keyDescription: "PROVER_API_KEYS, when set",
  keyRefusals: ["unauthorized", "forbidden"],
  schemas: { Proof: proofSchema, ProofStreamError, PublishEntry: publishEntrySchema },
};
