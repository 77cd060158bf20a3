/**
 * The keys a prover reveals to the notary in proxy mode, as the notary reads them (valibot): lower-case hex.
 * TLS 1.3: the server's traffic secrets always; the client's side only when the request is to be revealed, either as
 * its traffic secrets (every byte of the request) or as its epochs (the request with its hidden parts;
 * verify-client-epochs.ts), each with its record count and, when revealed, its record key and IV.
 * TLS 1.2: the server's write key and IV (the request stays hidden), or the master secret alone (the request
 * revealed: the notary derives every key and checks both Finished messages; verify-tls12-master.ts). Which of the two
 * forms, and the lengths, the verifier checks against the session it relayed.
 */
import * as v from "valibot";
import { MAX_CLIENT_EPOCHS } from "./verify-client-epochs.ts";

/** Hex of 4 to 64 bytes: IVs, keys, traffic secrets. Messages never repeat the value. */
const keyHex = v.pipe(v.string("expected a hex string"), v.regex(/^(?:[0-9a-f]{2}){4,64}$/, "expected 4 to 64 bytes of lower-case hex"));

/** No epoch of a request holds more records than a request of this many bytes in records of one byte would. */
const MAX_EPOCH_RECORDS = 1 << 20;

const clientEpoch = v.strictObject({
  records: v.pipe(
    v.number("expected a number"),
    v.integer("expected an integer"),
    v.minValue(1, "expected at least 1 record"),
    v.maxValue(MAX_EPOCH_RECORDS, `expected at most ${MAX_EPOCH_RECORDS} records`),
  ),
  key: v.optional(keyHex),
  iv: v.optional(keyHex),
});

export const revealedKeysSchema = v.variant("version", [
  v.strictObject({
    version: v.literal("TLS1.3"),
    serverHandshakeTrafficSecret: keyHex,
    serverApplicationTrafficSecret: keyHex,
    clientHandshakeTrafficSecret: v.optional(keyHex),
    clientApplicationTrafficSecret: v.optional(keyHex),
    clientEpochs: v.optional(
      v.pipe(
        v.array(clientEpoch, "expected an array"),
        v.minLength(1, "expected at least 1 epoch"),
        v.maxLength(MAX_CLIENT_EPOCHS, `expected at most ${MAX_CLIENT_EPOCHS} epochs`),
      ),
    ),
  }),
  v.strictObject({
    version: v.literal("TLS1.2"),
    serverWriteKey: v.optional(keyHex),
    serverWriteIv: v.optional(keyHex),
    masterSecret: v.optional(keyHex),
  }),
], 'expected version "TLS1.2" or "TLS1.3"');

/** What the prover reveals. Hex strings. The client's side only when the request is to be revealed. */
export type RevealedKeys = v.InferOutput<typeof revealedKeysSchema>;
