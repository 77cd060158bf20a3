/**
 * Proofs changed after signing, as an attacker would: each must then fail verification wherever it is checked
 * (cli verify, the client's verifyProof, the viewer).
 */
interface TamperableProof {
  body: { transcript: { recv: { revealed: { data: string }[] } }; evm?: { signature: string } };
}

/** One byte of the first revealed range of the response changed. */
export function withTranscriptByteChanged(proofText: string): string {
  const proof = JSON.parse(proofText) as TamperableProof;
  const range = proof.body.transcript.recv.revealed[0]!;
  const bytes = Buffer.from(range.data, "base64");
  bytes[bytes.length - 1] = bytes.at(-1)! ^ 0x01;
  range.data = bytes.toString("base64");
  return JSON.stringify(proof);
}

/** One hex digit of the EVM attestation's signature changed (the proof must carry one). */
export function withEvmAttestationChanged(proofText: string): string {
  const proof = JSON.parse(proofText) as TamperableProof;
  const evm = proof.body.evm;
  if (!evm) throw new Error("the proof carries no EVM attestation");
  const last = evm.signature.at(-1)!;
  evm.signature = evm.signature.slice(0, -1) + (last === "0" ? "1" : "0");
  return JSON.stringify(proof);
}
