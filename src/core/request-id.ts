import * as v from "valibot";

/**
 * A request id, the one schema wherever one enters (T-REQUEST-ID, /proof/{id}, the store's `requestId`, the
 * notary's attestation request): a UUID in any letter case, folded to lower case. One id then has one form in
 * the store, the proof stream and the signed proof, as in the EIP-712 attestation (which reads the UUID's 16
 * bytes): ids differing only in case are the same id, and its second use is a duplicate.
 */
export const requestIdSchema = (message: v.ErrorMessage<v.StringIssue | v.UuidIssue<string>>) =>
  v.pipe(v.string(message), v.trim(), v.uuid(message), v.toLowerCase());
