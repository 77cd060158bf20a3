/**
 * The EVM attestation: a second notary signature, beside the tlsproof/1 one, that a smart contract can check
 * with `ecrecover` (contracts/TlsproofVerifier.sol). Written down in docs/proof-format.md ("EVM attestation").
 *
 * It is an EIP-712 signature over typed data a contract can rebuild cheaply:
 *
 *   domain  EIP712Domain(string name,string version) = { name: "tlsproof", version: "1" }
 *           (no chainId, no verifyingContract: it attests a fact, valid on every chain and in every contract)
 *   struct  Attestation(bytes16 requestId,string serverName,uint16 serverPort,uint64 connectionTime,
 *                       uint64 responseTime,uint64 notarizedAt,uint32 sentLength,uint32 recvLength,
 *                       bool requestHidden,bool testTrustAnchor,bytes revealed)
 *
 *                       bool requestHidden,bool testTrustAnchor,bytes revealed,address recipient,Claim[] claims)
 *           Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)
 *
 * `serverPort` is 0 in MPC mode (its notary never dials the server); `requestHidden` is true for a proxy-mode proof
 * whose request the notary never saw; `recipient` is the address the proof was made for (`T-RECIPIENT`), 0 when
 * none; `claims` are the body's claims (src/claims/claim.ts), each with the members of its kind set and the others
 * empty (kind 0 value: `value`; 1 predicate: `op`, `operand`, `holds`; 2 commitment: `commitment`).
 * Older proofs are checked over the struct they were signed with (`era`): before claims (no `claims` in their body)
 * without `recipient` and `claims`; before `request` was attested, also without `serverPort`, `responseTime` and
 * `requestHidden`. `cli verify` still checks them; the contract accepts the current struct only.
 *
 * Each mode signs under its own type name (modes.ts, `evmType`): MPC proofs as `Attestation(...)`, proxy-mode ones as
 * `ProxyAttestation(...)`, the same members under another name: its type hash differs, so a contract that checks
 * `Attestation` only (every MPC attestation, unchanged) never accepts a proxy-mode one, and a contract accepts a mode
 * only by asking for its type.
 *
 * `revealed` packs every revealed range, sent ones first, each sorted by offset, as
 * `uint8 direction (0 sent, 1 recv) ‖ uint32 start ‖ uint32 length ‖ bytes` (big-endian, no padding). EIP-712
 * hashes a `bytes` member as keccak256 of it, so a contract rebuilds the commitment with one keccak over its
 * calldata, and the encoding is self-delimiting, so it parses one way only.
 *
 * The signature (r ‖ s ‖ v, low s) sits in the proof body (`body.evm`), which the tlsproof/1 signature covers:
 * a proof whose EVM attestation speaks of other data, or of another signer, is invalid.
 */
import { bytesToHex, concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import { keccak256 } from "../core/keccak/index.ts";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { type Address, addressOfPublicKey, recoverDigestSigner, signDigest } from "../core/eth-signature.ts";
import { base64ToBytes } from "../base/bytes.ts";
import type { EvmSignature, ProofBody, ProofMode } from "./format.ts";
import { modeFacts } from "./modes.ts";
import type { Direction } from "../core/transcript.ts";
import type { NotaryKey, PublicKey } from "./keys.ts";
import { type StructEra, eraOf, proofModeOf } from "./older-proofs.ts";
import { type Claim, CLAIM_KINDS } from "../claims/claim.ts";

export const EVM_DOMAIN = { name: "tlsproof", version: "1" } as const;
export const DOMAIN_TYPE = "EIP712Domain(string name,string version)";
const PRE_CLAIMS_MEMBERS =
  "bytes16 requestId,string serverName,uint16 serverPort,uint64 connectionTime,uint64 responseTime,uint64 notarizedAt," +
  "uint32 sentLength,uint32 recvLength,bool requestHidden,bool testTrustAnchor,bytes revealed";
export const CLAIM_TYPE = "Claim(uint8 kind,string subject,string op,string operand,bool holds,string value,bytes32 commitment)";
/** The struct's members after its type name, by era; a referenced struct's type follows (EIP-712's encodeType). */
const MEMBERS: Record<StructEra, string> = {
  current: `(${PRE_CLAIMS_MEMBERS},address recipient,Claim[] claims)${CLAIM_TYPE}`,
  "pre-claims": `(${PRE_CLAIMS_MEMBERS})`,
  legacy: "(bytes16 requestId,string serverName,uint64 connectionTime,uint64 notarizedAt,uint32 sentLength,uint32 recvLength,bool testTrustAnchor,bytes revealed)",
};
/** The struct of every mode, under the mode's type name. */
export const attestationType = (typeName: string): string => `${typeName}${MEMBERS.current}`;
/** The EIP-712 primary type of a proof mode (modes.ts); throws for a mode this process does not know. */
export function attestationTypeName(mode: ProofMode): string {
  const facts = modeFacts(mode);
  if (!facts) throw new TypeError(`EVM attestation: unknown proof mode ${JSON.stringify(mode)}`);
  return facts.evmType;
}

/** Bytes before each revealed range's data in `revealed`: direction, start, length. */
export const SEGMENT_HEADER_BYTES = 9;
export const DIRECTION_CODE: Record<Direction, number> = { sent: 0, recv: 1 };

/** A claim as the EVM attestation's Claim struct holds it. */
export interface EvmClaim {
  kind: number;
  subject: string;
  op: string;
  operand: string;
  holds: boolean;
  value: string;
  commitment: Uint8Array;
}

/** The EIP-712 struct as a contract receives it, and the mode that names its type. */
export interface EvmAttestation {
  mode: ProofMode;
  era: StructEra;
  requestId: Uint8Array;
  serverName: string;
  /** 0 when no port is attested (MPC mode, older proofs). */
  serverPort: number;
  connectionTime: number;
  /** 0 in older proofs. */
  responseTime: number;
  notarizedAt: number;
  requestHidden: boolean;
  sentLength: number;
  recvLength: number;
  testTrustAnchor: boolean;
  revealed: Uint8Array;
  /** 20 bytes; all zero when the proof names no recipient. */
  recipient: Uint8Array;
  claims: EvmClaim[];
}

const UUID = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i;
const SECP256K1_HALF_ORDER = secp256k1.Point.CURVE().n >> 1n;

/** A UUID's 16 bytes, or undefined for anything else (the notary only signs UUID request ids). */
export function requestIdBytes(requestId: string): Uint8Array | undefined {
  const parts = UUID.exec(requestId);
  return parts ? hexToBytes(parts.slice(1).join("")) : undefined;
}

/** The `revealed` member: every revealed range, sent then recv, as direction ‖ start ‖ length ‖ bytes. */
export function packRevealed(transcript: ProofBody["transcript"]): Uint8Array {
  const ranges = (["sent", "recv"] as const).flatMap((direction) =>
    transcript[direction].revealed.map(({ start, end, data }) => ({ direction, start, end, bytes: base64ToBytes(data) ?? new Uint8Array() })),
  );
  // Written into one array: a megabyte answer is copied once, not once per range and again for the whole.
  const packed = new Uint8Array(ranges.reduce((size, { bytes }) => size + SEGMENT_HEADER_BYTES + bytes.length, 0));
  const header = new DataView(packed.buffer);
  let offset = 0;
  for (const { direction, start, end, bytes } of ranges) {
    header.setUint8(offset, DIRECTION_CODE[direction]);
    header.setUint32(offset + 1, start);
    header.setUint32(offset + 5, end - start);
    packed.set(bytes, offset + SEGMENT_HEADER_BYTES);
    offset += SEGMENT_HEADER_BYTES + bytes.length;
  }
  return packed;
}

const NO_COMMITMENT = new Uint8Array(32);

/** A claim as its struct: the members of its kind set, the others empty. */
export function evmClaimOf(claim: Claim): EvmClaim {
  const base = { kind: CLAIM_KINDS[claim.kind], subject: claim.subject, op: "", operand: "", holds: false, value: "", commitment: NO_COMMITMENT };
  if (claim.kind === "value") return { ...base, value: claim.value };
  if (claim.kind === "predicate") return { ...base, op: claim.op, operand: claim.operand, holds: claim.holds };
  return { ...base, commitment: hexToBytes(claim.commitment.slice(2)) };
}

/** The struct for a proof body; throws TypeError when its request id is not a UUID. */
export function evmAttestationOf(body: ProofBody): EvmAttestation {
  const requestId = requestIdBytes(body.requestId);
  if (!requestId) throw new TypeError(`EVM attestation: request id ${JSON.stringify(body.requestId)} is not a UUID`);
  return {
    mode: proofModeOf(body),
    era: eraOf(body),
    requestId,
    serverName: body.serverName,
    serverPort: body.serverPort ?? 0,
    connectionTime: body.connectionTime,
    responseTime: body.responseTime ?? 0,
    notarizedAt: body.notarizedAt,
    requestHidden: body.request === "hidden",
    sentLength: body.transcript.sent.length,
    recvLength: body.transcript.recv.length,
    testTrustAnchor: body.testTrustAnchor,
    revealed: packRevealed(body.transcript),
    recipient: body.recipient === undefined ? new Uint8Array(20) : hexToBytes(body.recipient.slice(2)),
    claims: (body.claims ?? []).map(evmClaimOf),
  };
}

/** One 32-byte ABI word: an unsigned integer, or a bytesN value left-aligned. */
const word = (value: number | boolean | Uint8Array): Uint8Array => {
  const out = new Uint8Array(32);
  if (value instanceof Uint8Array) out.set(value);
  else new DataView(out.buffer).setBigUint64(24, BigInt(value));
  return out;
};
const keccakOfText = (text: string) => keccak256(text);

export const DOMAIN_SEPARATOR = keccak256(keccakOfText(DOMAIN_TYPE), keccakOfText(EVM_DOMAIN.name), keccakOfText(EVM_DOMAIN.version));
/** The type hash of a mode's struct in an era. */
const typehash = (mode: ProofMode, era: StructEra): Uint8Array => keccakOfText(`${attestationTypeName(mode)}${MEMBERS[era]}`);

const CLAIM_TYPEHASH = keccakOfText(CLAIM_TYPE);

/** hashStruct of a Claim. */
export const claimHash = (c: EvmClaim): Uint8Array =>
  keccak256(CLAIM_TYPEHASH, word(c.kind), keccakOfText(c.subject), keccakOfText(c.op), keccakOfText(c.operand), word(c.holds), keccakOfText(c.value), c.commitment);

/** An address as an ABI word: right-aligned. */
const addressWord = (address: Uint8Array): Uint8Array => concatBytes(new Uint8Array(12), address);

/** The struct's encoded members after its type hash, in the order of its type (older eras lack some). */
function encodedMembers(a: EvmAttestation): Uint8Array[] {
  const sizes = [word(a.sentLength), word(a.recvLength)];
  const tail = [word(a.testTrustAnchor), keccak256(a.revealed)];
  if (a.era === "legacy") return [word(a.requestId), keccakOfText(a.serverName), word(a.connectionTime), word(a.notarizedAt), ...sizes, ...tail];
  const claimsMembers = a.era === "current" ? [addressWord(a.recipient), keccak256(...a.claims.map(claimHash))] : [];
  return [
    word(a.requestId),
    keccakOfText(a.serverName),
    word(a.serverPort),
    word(a.connectionTime),
    word(a.responseTime),
    word(a.notarizedAt),
    ...sizes,
    word(a.requestHidden),
    ...tail,
    ...claimsMembers,
  ];
}

/** keccak256("\x19\x01" ‖ domainSeparator ‖ hashStruct(attestation)): what the notary signs and ecrecover checks. */
export function attestationDigest(attestation: EvmAttestation): Uint8Array {
  const structHash = keccak256(typehash(attestation.mode, attestation.era), ...encodedMembers(attestation));
  return keccak256(Uint8Array.of(0x19, 0x01), DOMAIN_SEPARATOR, structHash);
}

/** The Ethereum address of a notary key; undefined for secp256r1, which the EVM cannot recover. */
export function evmAddressOf(key: PublicKey): Address | undefined {
  return key.algorithm === "secp256k1" ? addressOfPublicKey(key.point) : undefined;
}

/** Addresses by key: a notary signs every proof with the same key, and deriving its public point is a scalar multiplication. */
const notaryAddresses = new WeakMap<NotaryKey, Address | null>();

/** The Ethereum address a notary signs EVM attestations with (`/info`, `/notaryinfo`); null for secp256r1. */
export function notaryEvmAddress(key: NotaryKey): Address | null {
  const known = notaryAddresses.get(key);
  if (known !== undefined) return known;
  const address = key.algorithm === "secp256k1" ? addressOfPublicKey(secp256k1.getPublicKey(key.privateKey, false)) : null;
  notaryAddresses.set(key, address);
  return address;
}

/** The body with its EVM attestation added: only secp256k1 keys make one, other bodies are returned as they are. */
export function withEvmAttestation(body: ProofBody, key: NotaryKey): ProofBody {
  const address = notaryEvmAddress(key);
  if (!address) return body;
  const evm: EvmSignature = { address, signature: signDigest(attestationDigest(evmAttestationOf(body)), key.privateKey) };
  return { ...body, evm };
}

const SIGNATURE_HEX = /^0x[0-9a-f]{130}$/;

/** True when `signature` is 0x + 65 bytes r ‖ s ‖ v with s in the lower half of the order, as the contract demands. */
export function isLowSSignature(signature: string): boolean {
  return SIGNATURE_HEX.test(signature) && BigInt(`0x${signature.slice(66, 130)}`) <= SECP256K1_HALF_ORDER;
}

/** The address that signed this digest, or undefined (malformed, high s, or recovering no key). */
const digestSigner = (digest: Uint8Array, signature: string): Address | undefined =>
  isLowSSignature(signature) ? recoverDigestSigner(digest, signature) : undefined;

/** The address that signed this attestation, or undefined (malformed, high s, or recovering no key). */
export function recoverAttestationSigner(attestation: EvmAttestation, signature: string): Address | undefined {
  return digestSigner(attestationDigest(attestation), signature);
}

export interface VerifiedEvmAttestation {
  address: Address;
  /** 0x-hex EIP-712 digest the notary signed. */
  digest: string;
  signature: string;
}

export type EvmAttestationCheck =
  | { status: "absent" }
  | { status: "valid"; attestation: VerifiedEvmAttestation }
  | { status: "invalid"; problem: string };

/**
 * Checks a body's EVM attestation against the notary key that signed the body: the attestation must be signed by
 * that key, over this body's data. A proof without one is valid (secp256r1 notaries and older proofs make none).
 */
export function checkEvmAttestation(body: ProofBody, key: PublicKey): EvmAttestationCheck {
  if (!body.evm) return { status: "absent" };
  const invalid = (problem: string): EvmAttestationCheck => ({ status: "invalid", problem: `body.evm: ${problem}` });
  const keyAddress = evmAddressOf(key);
  if (!keyAddress) return invalid(`a ${key.algorithm} notary key makes no EVM attestation`);
  if (body.evm.address !== keyAddress) return invalid(`address ${body.evm.address} is not the notary key's address ${keyAddress}`);
  if (!requestIdBytes(body.requestId)) return invalid("the request id is not a UUID");
  // The digest once: it hashes every revealed byte (a megabyte answer costs tens of milliseconds per hash).
  const digest = attestationDigest(evmAttestationOf(body));
  const signer = digestSigner(digest, body.evm.signature);
  if (!signer) return invalid("the signature is malformed or has a high s");
  if (signer !== keyAddress) return invalid(`the signature is not the notary's over this proof's data (it recovers ${signer})`);
  return { status: "valid", attestation: { address: signer, digest: `0x${bytesToHex(digest)}`, signature: body.evm.signature } };
}
