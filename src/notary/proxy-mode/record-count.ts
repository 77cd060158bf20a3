/**
 * How many TLS records a direction of the relay has begun, counted from the raw bytes as they pass (each record a
 * 5-byte header whose last two bytes give its length, then that many bytes). The notary bounds it: verifying a
 * relayed session costs per record, and a prover or target writing one-byte records would make an attestation cost
 * seconds of the notary's event loop (190,000 of them took 0.8 s).
 */

/** Records one direction may carry: a 16 MiB answer in 256-byte records, far more than an honest peer writes. */
export const MAX_RELAYED_RECORDS = 65_536;

const HEADER = 5;

/** A counter fed the direction's chunks in order; each call answers the records begun so far. */
export function recordCounter(): (chunk: Uint8Array) => number {
  let records = 0;
  /** Bytes of the current record's body still to come, or, while negative, header bytes still to come (-5..-1). */
  let remaining = 0;
  const header = new Uint8Array(HEADER);
  let headerFill = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (remaining > 0) {
        const take = Math.min(remaining, chunk.length - at);
        remaining -= take;
        at += take;
        continue;
      }
      if (headerFill === 0) records += 1;
      header[headerFill++] = chunk[at++]!;
      if (headerFill === HEADER) {
        remaining = (header[3]! << 8) | header[4]!;
        headerFill = 0;
      }
    }
    return records;
  };
}
