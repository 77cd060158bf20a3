/**
 * The headers of a `/proxy` call, declared once: `/proxy`'s route declaration (routes.ts) parses them with this
 * schema, each header read once, in this order, the first refusal winning (with its own code: the request id's is
 * `invalid_request_id`, T-REDACTED's `invalid_redaction` with the entry at fault, every other `invalid_header`);
 * the OpenAPI document describes them from it, and `/prepare` reads the target and sizes with the same entries.
 * Which of them a mode reads, and what it makes of them, is the mode's business (src/prover/proving/); a mode's own
 * headers are its to declare (ModeHeaders, src/prover/proving/mode.ts), and `/proxy`'s declaration adds them.
 */
import * as v from "valibot";
import type { EntriesSchema, RequestPart } from "../../http/route.ts";
import { requestIdSchema } from "../../core/request-id.ts";
import { parseTargetUrl } from "../../core/target.ts";
import { parseRedactions } from "../../redaction/index.ts";
import { CLAIM_SALT, type ClaimRequest, parseClaims, RECIPIENT } from "../../claims/grammar.ts";
import { SizeHeaders } from "../exchange/requested-sizes.ts";
import { MAX_QUORUM } from "../../proof/quorum.ts";
import { MODE_NAME } from "../../proof/modes.ts";

/** A header that may be left out: its value trimmed and in lower case, one of `words`. */
export const optionalWord = <const T extends readonly string[]>(words: T, message: string, description: string, defaultWord?: T[number]) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.toLowerCase(),
      v.check((word) => words.includes(word), message),
      v.description(description),
      v.metadata({ enum: [...words], ...(defaultWord === undefined ? {} : { default: defaultWord }) }),
      // Checked above: one of the words, typed so.
      v.transform((word) => word as T[number]),
    ),
  );

/** `T-PROVE-FAILED-REQ`'s spellings of yes and no. */
const YES = new Set(["true", "1"]);

export const ProxyHeaders = v.object({
  "t-proxy-url": v.pipe(
    v.string("T-PROXY-URL is required"),
    v.description("the target: an https:// URL, may carry a query"),
    v.metadata({ format: "uri", pattern: "^https://" }),
    v.transform((url: string) => parseTargetUrl(url)),
  ),
  "t-request-id": v.pipe(requestIdSchema("T-REQUEST-ID must be a UUID"), v.description("a UUID, single use for ever"), v.metadata({ format: "uuid" })),
  "t-redacted": v.optional(
    v.pipe(v.string(), v.description("what to hide: comma-separated patterns (docs/redaction.md)"), v.transform((entries: string) => parseRedactions(entries))),
    // No header: nothing asked to be hidden (the default-hidden credentials still are).
    "",
  ),
  "t-redacted-unmatched": optionalWord(["allow", "refuse"], "T-REDACTED-UNMATCHED must be allow or refuse", "allow: prove even when a pattern matched nothing", "refuse"),
  "t-prove-failed-req": optionalWord(["true", "false", "1", "0"], "T-PROVE-FAILED-REQ must be true or false", "prove answers with status ≥ 400 too", "false"),
  "t-proof-mode": v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.toLowerCase(),
      // Empty: the default mode, as when the header is absent.
      // Whether this prover offers it is the route's to say (its modes are its own).
      v.check((mode) => mode === "" || MODE_NAME.test(mode), "T-PROOF-MODE must be a mode's name: mpc, proxy, or another this prover offers"),
      v.description(
        "the proof mode: mpc (the notary sees nothing in clear) or proxy (the notary relays the connection; docs/proxy-mode.md), or a further mode this prover offers; default PROVER_PROOF_MODE",
      ),
    ),
  ),
  "t-claim": v.optional(
    v.pipe(
      v.string(),
      v.description("what the notary states of the answer: comma-separated claims (a value, a comparison, commit:), docs/claims.md"),
      v.transform((entries: string) => parseClaims(entries)),
    ),
    "",
  ),
  "t-claim-salt": v.optional(
    v.pipe(v.string(), v.trim(), v.regex(CLAIM_SALT, "T-CLAIM-SALT must be 0x and 64 hex digits"), v.description("the salt of commit: claims (32 bytes, in no proof)")),
  ),
  "t-recipient": v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.regex(RECIPIENT, "T-RECIPIENT must be an Ethereum address: 0x and 40 hex digits"),
      v.toLowerCase(),
      v.description("the Ethereum address the proof is made for, signed into it and its EVM attestation"),
    ),
  ),
  "t-quorum": v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.regex(/^[1-9][0-9]?$/, `T-QUORUM must be a whole number from 1 to ${MAX_QUORUM}`),
      v.transform(Number),
      v.maxValue(MAX_QUORUM, `T-QUORUM must be a whole number from 1 to ${MAX_QUORUM}`),
      v.description("how many distinct notaries prove the call, each in its own session that dials the target (needs T-CLAIM; GET only); default PROVER_NOTARY_QUORUM"),
    ),
  ),
  ...SizeHeaders.entries,
});

/** The headers as a mode reads them: the target and id parsed, flags as booleans, sizes as numbers. */
export interface ProxyCallHeaders {
  target: ReturnType<typeof parseTargetUrl>;
  requestId: string;
  patterns: ReturnType<typeof parseRedactions>;
  allowUnmatched: boolean;
  proveFailed: boolean;
  /** Absent: the prover's default mode. */
  mode?: string;
  /** T-MAX-SENT-DATA and T-MAX-RECV-DATA as announced (each may be absent); what they bound is the mode's. */
  announced: { maxSentData?: number; maxRecvData?: number };
  /** `T-CLAIM`, `T-CLAIM-SALT` (0x hex), `T-RECIPIENT` (lower-case 0x address). */
  claims: ClaimRequest[];
  claimSalt?: string;
  recipient?: string;
  /** `T-QUORUM`, when given. */
  quorum?: number;
}

/**
 * The headers as `/proxy`'s declaration reads them: refused as invalid_header unless the header has its own code
 * (T-REDACTED's parser throws its own); a message naming its header stands alone, the others are placed
 * (`header: t-max-sent-data: ...`).
 */
export const proxyHeadersPart = {
  schema: ProxyHeaders,
  code: "invalid_header",
  entryCodes: { "t-request-id": "invalid_request_id", "t-redacted": "invalid_redaction", "t-claim": "invalid_claim" },
  wording: { where: "header", selfNamed: true },
} as const satisfies RequestPart<EntriesSchema>;

/** The headers as a mode reads them, from what the declaration parsed. */
export function callHeadersOf(h: v.InferOutput<typeof ProxyHeaders>): ProxyCallHeaders {
  return {
    target: h["t-proxy-url"],
    requestId: h["t-request-id"],
    patterns: h["t-redacted"],
    allowUnmatched: h["t-redacted-unmatched"] === "allow",
    proveFailed: YES.has(h["t-prove-failed-req"] ?? "false"),
    mode: h["t-proof-mode"] === "" ? undefined : h["t-proof-mode"],
    announced: {
      ...(h["t-max-sent-data"] !== undefined && { maxSentData: h["t-max-sent-data"] }),
      ...(h["t-max-recv-data"] !== undefined && { maxRecvData: h["t-max-recv-data"] }),
    },
    claims: h["t-claim"],
    ...(h["t-claim-salt"] !== undefined && { claimSalt: h["t-claim-salt"] }),
    ...(h["t-recipient"] !== undefined && { recipient: h["t-recipient"] }),
    ...(h["t-quorum"] !== undefined && { quorum: h["t-quorum"] }),
  };
}
