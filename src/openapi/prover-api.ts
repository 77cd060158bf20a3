/**
 * What the prover's document says beside its declared routes: its title, the schemas it names, and `/proxy`,
 * described here by hand until its headers are declared as one schema (src/prover/proxy/routes.ts reads them one
 * by one).
 */
import { proofSchema } from "../proof/proof-schema.ts";
import { ProofStreamError } from "../prover/delivery/routes.ts";
import { publishEntrySchema } from "../store/publish.ts";
import type { ApiDescription } from "./document.ts";
import type { JsonSchema } from "./json-schema.ts";
import type { Operation } from "./operation.ts";

export const proverApi: ApiDescription = {
  title: "tlsproof prover",
  description: "A proving proxy over MPC-TLS. README.md and docs/api.md have the full contract.",
  keyDescription: "PROVER_API_KEYS, when set",
  keyRefusals: ["unauthorized", "forbidden"],
  schemas: { Proof: proofSchema, ProofStreamError, PublishEntry: publishEntrySchema },
};

const header = (name: string, description: string, schema: JsonSchema, required = false) => ({ in: "header", name, description, required, schema });
const proxyHeaders = [
  header("T-PROXY-URL", "the target: an https:// URL, may carry a query", { type: "string", format: "uri", pattern: "^https://" }, true),
  header("T-REQUEST-ID", "a UUID, single use for ever", { type: "string", format: "uuid" }, true),
  header("T-REDACTED", "what to hide: comma-separated patterns (docs/redaction.md)", { type: "string" }),
  header("T-REDACTED-UNMATCHED", "allow: prove even when a pattern matched nothing", { enum: ["allow", "refuse"], default: "refuse" }),
  header("T-PROVE-FAILED-REQ", "prove answers with status ≥ 400 too", { enum: ["true", "false"], default: "false" }),
  header("T-PROOF-MODE", "mpc (the notary sees nothing in clear) or proxy (the notary relays the connection; README, Proxy mode); default PROVER_PROOF_MODE", { enum: ["mpc", "proxy"] }),
  header("T-PROXY-REVEAL", "proxy mode: request puts the request in the proof too", { enum: ["request"] }),
  header("T-MAX-SENT-DATA", "bytes the request needs, headers included", { type: "string", pattern: "^[0-9]+$" }),
  header("T-MAX-RECV-DATA", "bytes the response needs, headers included", { type: "string", pattern: "^[0-9]+$" }),
];

const errorContent = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };

const proxyOperation = (method: string): Operation => ({
  summary: `${method.toUpperCase()} the target through an MPC-TLS session (or in proxy mode) and prove the exchange`,
  operationId: `proxy${method[0]!.toUpperCase()}${method.slice(1)}`,
  parameters: proxyHeaders,
  ...(method === "get" || method === "delete" ? {} : { requestBody: { description: "a JSON body, sent on to the target", content: { "application/json": { schema: {} } } } }),
  responses: {
    default: {
      description:
        "the target's answer: its status, headers and body; T-PROOF-ID names the request id when a proof follows, " +
        "T-SESSION-CLASS the session's size class, T-SESSION-RETRIED the class a GET was repeated in after overflowing",
      headers: {
        "T-PROOF-ID": { schema: { type: "string", format: "uuid" } },
        "T-SESSION-CLASS": { schema: { type: "string", pattern: "^[0-9]+/[0-9]+$" } },
        "T-SESSION-RETRIED": { schema: { type: "string", pattern: "^[0-9]+/[0-9]+$" } },
      },
    },
    ...Object.fromEntries([400, 401, 403, 413, 500, 502, 503, 504].map((status) => [String(status), { description: "an error with its code", content: errorContent }])),
  },
});

/** `ALL /proxy`: the methods the engine can send. */
export const proxyOperations = (): Record<string, Operation> => Object.fromEntries(["get", "post", "put", "delete"].map((method) => [method, proxyOperation(method)]));
