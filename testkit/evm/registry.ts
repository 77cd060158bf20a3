/**
 * contracts/NotaryRegistry.sol deployed on a Chain, called through its ABI as notaries, reporters and dapps would.
 */
import { type Abi, decodeErrorResult, decodeFunctionResult, encodeAbiParameters, encodeFunctionData, type Hex } from "viem";
import type { EvmAttestation } from "../../src/proof/evm-attestation.ts";
import { attestationArgs } from "../../src/proof/evm-calldata.ts";
import type { Account, Chain, TxResult } from "./chain.ts";
import { compileContract } from "./compile.ts";
import type { Outcome, VerifiedClaim } from "./verifier.ts";

/** An attestation with its signature, as the registry takes it (`TlsproofAttestation.Signed`). */
export interface SignedAttestation {
  attestation: EvmAttestation;
  signature: Hex;
}

const signedArg = ({ attestation, signature }: SignedAttestation) => {
  const { tuple, revealed } = attestationArgs(attestation);
  return { attestation: tuple, revealed, signature, proxy: attestation.mode === "proxy" };
};

export class RegistryContract {
  private constructor(
    private readonly chain: Chain,
    readonly address: Hex,
    private readonly abi: Abi,
  ) {}

  static async deploy(chain: Chain, from: Account, minimumStake: bigint, unbondingDelayS: number): Promise<RegistryContract> {
    const { abi, bytecode } = compileContract("NotaryRegistry");
    const args = encodeAbiParameters([{ type: "uint256" }, { type: "uint256" }], [minimumStake, BigInt(unbondingDelayS)]);
    return new RegistryContract(chain, await chain.deploy(from, `${bytecode}${args.slice(2)}` as Hex), abi);
  }

  private errorName(output: Hex): string {
    return output === "0x" ? "(no reason)" : decodeErrorResult({ abi: this.abi, data: output }).errorName;
  }

  /** A transaction from `from`; its outcome, or the name of the error it reverted with. */
  async send(from: Account, functionName: string, args: readonly unknown[] = [], value = 0n): Promise<Outcome<TxResult>> {
    const result = await this.chain.send(from, this.address, encodeFunctionData({ abi: this.abi, functionName, args }), value);
    return result.reverted ? { ok: false, error: this.errorName(result.output) } : { ok: true, value: result };
  }

  private async read<T>(from: Account, functionName: string, args: readonly unknown[]): Promise<Outcome<T>> {
    const result = await this.chain.call(from, this.address, encodeFunctionData({ abi: this.abi, functionName, args }));
    if (result.reverted) return { ok: false, error: this.errorName(result.output) };
    return { ok: true, value: decodeFunctionResult({ abi: this.abi, functionName, data: result.output }) as T };
  }

  register = (notary: Account, stake: bigint) => this.send(notary, "register", [], stake);
  requestExit = (notary: Account) => this.send(notary, "requestExit");
  withdraw = (notary: Account) => this.send(notary, "withdraw");
  slash = (reporter: Account, a: SignedAttestation, b: SignedAttestation) => this.send(reporter, "slash", [signedArg(a), signedArg(b)]);
  quorumTransaction = (from: Account, signed: SignedAttestation[], quorum: number) => this.send(from, "verifiedQuorumClaims", [signed.map(signedArg), BigInt(quorum)]);

  async stakeOf(from: Account, notary: Hex): Promise<bigint> {
    const read = await this.read<[bigint, bigint]>(from, "notaries", [notary]);
    if (!read.ok) throw new Error(read.error);
    return read.value[0];
  }

  async isBonded(from: Account, notary: Hex): Promise<boolean> {
    const read = await this.read<boolean>(from, "isBonded", [notary]);
    if (!read.ok) throw new Error(read.error);
    return read.value;
  }

  /** The claims a quorum states, and its signers (ascending), or the reason the registry refused it. */
  async verifiedQuorumClaims(from: Account, signed: SignedAttestation[], quorum: number): Promise<Outcome<{ claims: readonly VerifiedClaim[]; notaries: readonly Hex[] }>> {
    const read = await this.read<[readonly VerifiedClaim[], { serverName: string; notaries: readonly Hex[] }]>(from, "verifiedQuorumClaims", [signed.map(signedArg), BigInt(quorum)]);
    return read.ok ? { ok: true, value: { claims: read.value[0], notaries: read.value[1].notaries } } : read;
  }
}
