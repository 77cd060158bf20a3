/**
 * The keys a prover reveals to the notary in proxy mode, as the notary reads them (valibot): lower-case hex, the
 * server's always, the client's only when the request is to be revealed. Lengths are checked against the cipher
 * suite by the verifier, which knows it from the relayed ServerHello.
 */
import * as v from "valibot";

/** Hex of 4 to 64 bytes: IVs, keys, traffic secrets. Messages never repeat the value. */
const keyHex = v.pipe(v.string("expected a hex string"), v.regex(/^(?:[0-9a-f]{2}){4,64}$/, "expected 4 to 64 bytes of lower-case hex"));

export const revealedKeysSchema = v.variant("version", [
  v.strictObject({
    version: v.literal("TLS1.3"),
    serverHandshakeTrafficSecret: keyHex,
    serverApplicationTrafficSecret: keyHex,
    clientHandshakeTrafficSecret: v.optional(keyHex),
    clientApplicationTrafficSecret: v.optional(keyHex),
  }),
  v.strictObject({
    version: v.literal("TLS1.2"),
    serverWriteKey: keyHex,
    serverWriteIv: keyHex,
    clientWriteKey: v.optional(keyHex),
    clientWriteIv: v.optional(keyHex),
  }),
], 'expected version "TLS1.2" or "TLS1.3"');

/** What the prover reveals. Hex strings. Client keys only when the client asked for the request to be revealed. */
export type RevealedKeys = v.InferOutput<typeof revealedKeysSchema>;
