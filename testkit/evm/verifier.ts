/**
 * contracts/TlsproofVerifier.sol deployed on a Chain, called through its ABI as a dapp would call it.
 */
import { bytesToHex } from "@noble/hashes/utils.js";
import { type Abi, decodeErrorResult, decodeFunctionResult, encodeFunctionData, type Hex } from "viem";
import type { Direction } from "../../src/core/transcript.ts";
import { DIRECTION_CODE, type EvmAttestation } from "../../src/proof/evm-attestation.ts";
import { attestationArgs, type EvmClaimArgs } from "../../src/proof/evm-calldata.ts";

export { attestationArgs };
import type { Account, Chain, TxResult } from "./chain.ts";
import { compileContract } from "./compile.ts";

const hex = (bytes: Uint8Array): Hex => `0x${bytesToHex(bytes)}`;

/** A call's answer, or the name of the custom error it reverted with. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: string };

/** What `verifiedRange` answers: the bytes, and what they are evidence of. */
export interface VerifiedRange {
  data: Uint8Array;
  serverName: string;
  serverPort: number;
  connectionTime: bigint;
  responseTime: bigint;
  notarizedAt: bigint;
  requestHidden: boolean;
  attestationDigest: Hex;
}

/** A claim as the contract returns it. */
export type VerifiedClaim = EvmClaimArgs;

export class VerifierContract {
  private constructor(
    private readonly chain: Chain,
    readonly owner: Account,
    readonly address: Hex,
    private readonly abi: Abi,
  ) {}

  static async deploy(chain: Chain, owner: Account): Promise<VerifierContract> {
    const { abi, bytecode } = compileContract("TlsproofVerifier");
    return new VerifierContract(chain, owner, await chain.deploy(owner, bytecode), abi);
  }

  private async read<T>(functionName: string, args: readonly unknown[]): Promise<Outcome<T>> {
    const result = await this.chain.call(this.owner, this.address, encodeFunctionData({ abi: this.abi, functionName, args }));
    if (result.reverted) {
      return { ok: false, error: result.output === "0x" ? "(no reason)" : decodeErrorResult({ abi: this.abi, data: result.output }).errorName };
    }
    const value = decodeFunctionResult({ abi: this.abi, functionName, data: result.output }) as T;
    return { ok: true, value };
  }

  /** A transaction from `from` (the owner unless given); throws with the error name when it reverts. */
  private async write(functionName: string, args: readonly unknown[], from = this.owner): Promise<TxResult> {
    const result = await this.chain.send(from, this.address, encodeFunctionData({ abi: this.abi, functionName, args }));
    if (result.reverted) throw new Error(decodeErrorResult({ abi: this.abi, data: result.output }).errorName);
    return result;
  }

  /** The contract's digest of the attestation's mode (`digest`, or `proxyDigest` for proxy mode). */
  digest(attestation: EvmAttestation): Promise<Outcome<Hex>> {
    const { tuple, revealed } = attestationArgs(attestation);
    return this.read(attestation.mode === "proxy" ? "proxyDigest" : "digest", [tuple, revealed]);
  }

  /** The notary address that signed, or the reason the contract refused (`verify`, or `verifyProxy` when asked). */
  verify(attestation: EvmAttestation, signature: Hex, as: "mpc" | "proxy" = "mpc"): Promise<Outcome<Hex>> {
    const { tuple, revealed } = attestationArgs(attestation);
    return this.read(as === "proxy" ? "verifyProxy" : "verify", [tuple, revealed, signature]);
  }

  /** Bytes [start, end) of a direction, from verified segments only, with what the contract says they attest. */
  async verifiedRange(attestation: EvmAttestation, signature: Hex, direction: Direction, start: number, end: number): Promise<Outcome<Uint8Array>> {
    const outcome = await this.verifiedRangeWithContext(attestation, signature, direction, start, end);
    return outcome.ok ? { ...outcome, value: outcome.value.data } : outcome;
  }

  /**
   * `verifiedRange`'s whole answer (`verifiedProxyRange`'s for a proxy-mode attestation): the bytes, the attested
   * server name, port and times, whether the request was hidden, the attestation's digest.
   */
  async verifiedRangeWithContext(attestation: EvmAttestation, signature: Hex, direction: Direction, start: number, end: number): Promise<Outcome<VerifiedRange>> {
    const { tuple, revealed } = attestationArgs(attestation);
    const functionName = attestation.mode === "proxy" ? "verifiedProxyRange" : "verifiedRange";
    const outcome = await this.read<[Hex, Omit<VerifiedRange, "data">]>(functionName, [tuple, revealed, signature, DIRECTION_CODE[direction], start, end]);
    if (!outcome.ok) return outcome;
    const [data, evidence] = outcome.value;
    return { ok: true, value: { data: new Uint8Array(Buffer.from(data.slice(2), "hex")), ...evidence } };
  }

  /**
   * A transaction calling `verify`, or `verifiedRange` when a range is given: its gas is what a dapp's transaction
   * pays (`gasUsed`, calldata included), `executionGas` the contract's part of it.
   */
  transaction(attestation: EvmAttestation, signature: Hex, range?: { direction: Direction; start: number; end: number }): Promise<TxResult> {
    const { tuple, revealed } = attestationArgs(attestation);
    return range
      ? this.write("verifiedRange", [tuple, revealed, signature, DIRECTION_CODE[range.direction], range.start, range.end])
      : this.write("verify", [tuple, revealed, signature]);
  }

  /**
   * `verifiedClaims` (`verifiedProxyClaims` for a proxy-mode attestation): the claims as the contract returns them
   * once the attestation verified, with the recipient it is evidence for.
   */
  async verifiedClaims(attestation: EvmAttestation, signature: Hex): Promise<Outcome<{ claims: readonly VerifiedClaim[]; recipient: Hex }>> {
    const { tuple, revealed } = attestationArgs(attestation);
    const functionName = attestation.mode === "proxy" ? "verifiedProxyClaims" : "verifiedClaims";
    const outcome = await this.read<[readonly VerifiedClaim[], { recipient: Hex }]>(functionName, [tuple, revealed, signature]);
    if (!outcome.ok) return outcome;
    const [claims, evidence] = outcome.value;
    return { ok: true, value: { claims, recipient: evidence.recipient } };
  }

  /** A transaction calling `verifiedProxyClaims` (or `verifiedClaims`): what a dapp reading claims pays. */
  claimsTransaction(attestation: EvmAttestation, signature: Hex): Promise<TxResult> {
    const { tuple, revealed } = attestationArgs(attestation);
    return this.write(attestation.mode === "proxy" ? "verifiedProxyClaims" : "verifiedClaims", [tuple, revealed, signature]);
  }

  async setNotary(notary: Hex, allowed: boolean, from?: Account): Promise<void> {
    await this.write("setNotary", [notary, allowed], from);
  }

  async setAcceptsTestTrustAnchor(accepted: boolean): Promise<void> {
    await this.write("setAcceptsTestTrustAnchor", [accepted]);
  }

  async setAcceptsProxyMode(accepted: boolean): Promise<void> {
    await this.write("setAcceptsProxyMode", [accepted]);
  }

  async setAcceptsHiddenRequest(accepted: boolean): Promise<void> {
    await this.write("setAcceptsHiddenRequest", [accepted]);
  }
}
