/**
 * Gas of checking an EVM attestation on chain: contracts/TlsproofVerifier.sol, compiled with the pinned solc, in
 * the in-memory EVM of the tests (@ethereumjs/vm, Prague rules).
 *   bun scripts/bench-evm.ts
 * For 1 KB and 4 KB of revealed transcript bytes (HTTP text, so almost no zero bytes in calldata), split as a
 * proof splits them (one hidden value per direction: two revealed segments each; also 16 segments for 4 KB), it
 * measures a transaction calling `verify` (what a dapp's transaction pays: 21,000 base, calldata, execution) and the
 * execution alone of `verify` and of `verifiedRange` reading a 32-byte value from the last segment.
 * Then, for a 1 KB attestation with 0, 1, 4 and 8 claims (a comparison, a value, a commitment, in turn) and a
 * recipient, a transaction calling `verifiedClaims` (verify, then return the claims and the evidence).
 * Last, contracts/NotaryRegistry.sol: a notary's `register`, `requestExit` and `withdraw`, a quorum of 1, 2 and 3
 * bonded notaries' 1 KB attestations with 4 claims (`verifiedQuorumClaims`), and a `slash` with two of them.
 * No MPC session: gas depends on sizes and segment count only, not on where the signed bytes came from.
 */
import { cpus } from "node:os";
import type { Hex } from "viem";
import { evmAttestationOf, notaryEvmAddress, withEvmAttestation } from "../src/proof/evm-attestation.ts";
import type { Claim, ProofBody, RevealedRange, TranscriptDirection } from "../src/proof/format.ts";
import { generateKey, type NotaryKey } from "../src/proof/keys.ts";
import { Chain, type TxResult } from "../testkit/evm/chain.ts";
import { attestationArgs, VerifierContract } from "../testkit/evm/verifier.ts";
import { RegistryContract } from "../testkit/evm/registry.ts";

const HIDDEN_BYTES = 24;

/** `revealedBytes` of HTTP-like text in `segments` revealed ranges, one hidden value between each two. */
function direction(revealedBytes: number, segments: number, line: string): TranscriptDirection {
  const text = Buffer.from(line.repeat(Math.ceil((revealedBytes + segments * HIDDEN_BYTES) / line.length)));
  const revealed: RevealedRange[] = [];
  let position = 0;
  for (let i = 0; i < segments; i++) {
    const size = Math.floor(revealedBytes / segments) + (i < revealedBytes % segments ? 1 : 0);
    revealed.push({ start: position, end: position + size, data: text.subarray(position, position + size).toString("base64") });
    position += size + HIDDEN_BYTES;
  }
  return { length: position - HIDDEN_BYTES, revealed };
}

/** The claims of the example, in turn, `count` of them. */
function claims(count: number): Claim[] {
  const kinds: Claim[] = [
    { kind: "predicate", subject: "res:body:account.balance", op: ">", operand: "1000", holds: true },
    { kind: "value", subject: "res:body:account.name", value: '"alice"' },
    { kind: "commitment", subject: "res:body:account.balance", commitment: `0x${"3c".repeat(32)}` },
    { kind: "predicate", subject: "res:body:account.currency", op: "==", operand: '"EUR"', holds: true },
  ];
  return Array.from({ length: count }, (_, i) => kinds[i % kinds.length]!);
}

function body(key: NotaryKey, revealedBytes: number, segments: number, claimCount = 0): ProofBody {
  const sentBytes = Math.floor(revealedBytes / 4);
  const half = segments / 2;
  return {
    requestId: crypto.randomUUID(),
    notary: { publicKey: key.publicKeyPem, algorithm: key.algorithm },
    mode: "mpc",
    serverName: "api.example.com",
    connectionTime: 1_795_258_023,
    responseTime: 1_795_258_024,
    responseFraming: "content-length",
    request: "revealed",
    tlsVersion: "TLS1.2",
    notarizedAt: 1_795_258_030_745,
    transcript: {
      sent: direction(sentBytes, half, "GET /v1/account?user=42 HTTP/1.1\r\nHost: api.example.com\r\nx-header: value\r\n"),
      recv: direction(revealedBytes - sentBytes, half, '{"account":{"id":1000,"name":"alice","balance":"12.50","currency":"EUR"}},'),
    },
    redactions: [],
    testTrustAnchor: false,
    notaryVersion: "0.1.0",
    claims: claims(claimCount),
    ...(claimCount > 0 ? { recipient: "0x1111111111111111111111111111111111111111" } : {}),
  };
}

const chain = await Chain.start();
const owner = await chain.account();
const verifier = await VerifierContract.deploy(chain, owner);
const key = generateKey("secp256k1");
await verifier.setNotary(notaryEvmAddress(key)!, true);

const rows: string[] = [];
for (const [revealedBytes, segments] of [[1024, 4], [4096, 4], [4096, 16]] as const) {
  const signed = withEvmAttestation(body(key, revealedBytes, segments), key);
  const attestation = evmAttestationOf(signed);
  const signature = signed.evm!.signature as Hex;
  // Transactions revert on a refusal, so every figure below is of an accepted attestation.
  const verify = await verifier.transaction(attestation, signature);
  const last = signed.transcript.recv.revealed.at(-1)!;
  const read = await verifier.transaction(attestation, signature, { direction: "recv", start: last.end - 32, end: last.end });
  const revealedArgumentBytes = (attestationArgs(attestation).revealed.length - 2) / 2;
  const gas = (value: bigint) => value.toLocaleString("en");
  const floor = (tx: TxResult) => (tx.gasUsed === tx.calldataFloorGas ? " (calldata floor)" : "");
  rows.push(
    `| ${revealedBytes / 1024} KB in ${segments} segments | ${revealedArgumentBytes} B | ${gas(verify.gasUsed)}${floor(verify)} | ` +
      `${gas(verify.executionGas)} | ${gas(read.gasUsed)}${floor(read)} | ${gas(read.executionGas)} |`,
  );
}

console.log(`Machine: ${cpus().length} cores, Bun ${Bun.version}; gas does not depend on the machine.\n`);
console.log("| Revealed data | `revealed` argument | `verify` transaction | of which execution | `verifiedRange` transaction (32 B from the last segment) | of which execution |");
console.log("|---|---|---|---|---|---|");
for (const row of rows) console.log(row);

console.log("\n| 1 KB attestation with | `verifiedClaims` transaction | of which execution |");
console.log("|---|---|---|");
for (const count of [0, 1, 4, 8]) {
  const signed = withEvmAttestation(body(key, 1024, 4, count), key);
  const tx = await verifier.claimsTransaction(evmAttestationOf(signed), signed.evm!.signature as Hex);
  console.log(`| ${count} claims${count > 0 ? " and a recipient" : ""} | ${tx.gasUsed.toLocaleString("en")} | ${tx.executionGas.toLocaleString("en")} |`);
}

const registry = await RegistryContract.deploy(chain, owner, 10n ** 18n, 3600);
const notaryKeys = [generateKey("secp256k1"), generateKey("secp256k1"), generateKey("secp256k1")].sort((a, b) =>
  BigInt(notaryEvmAddress(a)!) < BigInt(notaryEvmAddress(b)!) ? -1 : 1,
);
const registryRows: string[] = [];
const row = (what: string, tx: { gasUsed: bigint; executionGas: bigint }) =>
  registryRows.push(`| ${what} | ${tx.gasUsed.toLocaleString("en")} | ${tx.executionGas.toLocaleString("en")} |`);
const ok = <T>(outcome: { ok: true; value: T } | { ok: false; error: string }): T => {
  if (!outcome.ok) throw new Error(outcome.error);
  return outcome.value;
};
for (const [i, key] of notaryKeys.entries()) {
  const tx = ok(await registry.register(await chain.accountOf(key.privateKey), 10n ** 18n));
  if (i === 0) row("`register` (first stake of a notary)", tx);
}
const requestId = crypto.randomUUID();
const quorumOf = (count: number) =>
  notaryKeys.slice(0, count).map((key) => {
    const signed = withEvmAttestation({ ...body(key, 1024, 4, 4), requestId }, key);
    return { attestation: evmAttestationOf(signed), signature: signed.evm!.signature as Hex };
  });
for (const count of [1, 2, 3]) row(`\`verifiedQuorumClaims\`, ${count} of ${count} (1 KB each, 4 claims)`, ok(await registry.quorumTransaction(owner, quorumOf(count), count)));
const [first] = quorumOf(1);
const conflicting = withEvmAttestation({ ...body(notaryKeys[0]!, 1024, 4, 4), requestId, notarizedAt: 1 }, notaryKeys[0]!);
row("`slash` (two 1 KB attestations, 4 claims each)", ok(await registry.slash(owner, first!, { attestation: evmAttestationOf(conflicting), signature: conflicting.evm!.signature as Hex })));
const exiting = await chain.accountOf(notaryKeys[1]!.privateKey);
row("`requestExit`", ok(await registry.requestExit(exiting)));
chain.advance(3600);
row("`withdraw`", ok(await registry.withdraw(exiting)));
console.log("\n| NotaryRegistry | transaction gas | of which execution |");
console.log("|---|---|---|");
for (const line of registryRows) console.log(line);
