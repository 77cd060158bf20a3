/**
 * A real EVM in memory (@ethereumjs/vm, Prague rules) with funded accounts: contracts are deployed and called
 * by signed transactions, so gas figures include the intrinsic and calldata costs a real chain charges.
 */
import { Common, Hardfork, Mainnet } from "@ethereumjs/common";
import { createFeeMarket1559Tx } from "@ethereumjs/tx";
import { type Address as EthAddress, createAccount, createAddressFromPrivateKey, createAddressFromString } from "@ethereumjs/util";
import { createVM, runTx, type VM } from "@ethereumjs/vm";
import { createBlock } from "@ethereumjs/block";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import type { Hex } from "viem";

export const EVM_VERSION = "prague";
const GAS_LIMIT = 30_000_000n;

export interface Account {
  address: Hex;
  privateKey: Uint8Array;
}

export interface CallResult {
  /** Return data, or the revert data when `reverted`. */
  output: Hex;
  reverted: boolean;
}

export interface TxResult {
  /** Everything the sender pays for: intrinsic and calldata costs plus execution (after the calldata floor). */
  gasUsed: bigint;
  /** The called code's part of it. */
  executionGas: bigint;
  /** EIP-7623's least charge for this calldata (Prague): a transaction with little execution pays this instead. */
  calldataFloorGas: bigint;
  /** Return data, or the revert data when `reverted`. */
  output: Hex;
  reverted: boolean;
  createdAddress?: Hex;
}

const toHex = (bytes: Uint8Array): Hex => `0x${bytesToHex(bytes)}`;

/** 21,000 + 10 per calldata token (a zero byte is one token, any other byte four). */
function calldataFloorGas(data: Uint8Array): bigint {
  const zeros = data.filter((byte) => byte === 0).length;
  return 21_000n + 10n * BigInt(zeros + 4 * (data.length - zeros));
}

export class Chain {
  /** The timestamp of the blocks transactions are mined in, and calls see (Unix seconds). */
  private time = 1_800_000_000n;

  private constructor(
    private readonly vm: VM,
    private readonly common: Common,
  ) {}

  /** Moves the chain's clock forward by `seconds`: the next blocks carry the later time. */
  advance(seconds: number): void {
    this.time += BigInt(seconds);
  }

  /** An account of this key (a notary's, say), funded with 1000 ether. */
  async accountOf(privateKey: Uint8Array): Promise<Account> {
    const address = createAddressFromPrivateKey(privateKey);
    await this.vm.stateManager.putAccount(address, createAccount({ nonce: 0n, balance: 10n ** 21n }));
    return { address: address.toString() as Hex, privateKey };
  }

  /** The balance of `address`, in wei. */
  async balance(address: Hex): Promise<bigint> {
    return (await this.vm.stateManager.getAccount(createAddressFromString(address)))?.balance ?? 0n;
  }

  private block() {
    return createBlock({ header: { timestamp: this.time, gasLimit: GAS_LIMIT, baseFeePerGas: 1n } }, { common: this.common });
  }

  static async start(): Promise<Chain> {
    const common = new Common({ chain: Mainnet, hardfork: Hardfork.Prague });
    return new Chain(await createVM({ common }), common);
  }

  /** A new account holding 1000 ether. */
  account(): Promise<Account> {
    return this.accountOf(secp256k1.utils.randomSecretKey());
  }

  /** A signed transaction from `from` (sending `value` wei), mined in its own block at the chain's time. */
  async send(from: Account, to: Hex | undefined, data: Hex, value = 0n): Promise<TxResult> {
    const nonce = (await this.vm.stateManager.getAccount(createAddressFromString(from.address)))?.nonce ?? 0n;
    const tx = createFeeMarket1559Tx(
      { nonce, to, data, value, gasLimit: GAS_LIMIT, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n },
      { common: this.common },
    ).sign(from.privateKey);
    const result = await runTx(this.vm, { tx, block: this.block(), skipBlockGasLimitValidation: true });
    const exec = result.execResult;
    return {
      gasUsed: result.totalGasSpent,
      executionGas: exec.executionGasUsed,
      calldataFloorGas: calldataFloorGas(hexToBytes(data.slice(2))),
      output: toHex(exec.returnValue),
      reverted: exec.exceptionError !== undefined,
      ...(result.createdAddress ? { createdAddress: result.createdAddress.toString() as Hex } : {}),
    };
  }

  async deploy(from: Account, bytecode: Hex): Promise<Hex> {
    const result = await this.send(from, undefined, bytecode);
    if (result.reverted || !result.createdAddress) throw new Error(`deployment reverted: ${result.output}`);
    return result.createdAddress;
  }

  /** A read-only call (eth_call): no transaction. */
  async call(from: Account, to: Hex, data: Hex): Promise<CallResult> {
    const result = await this.vm.evm.runCall({
      caller: createAddressFromString(from.address) as EthAddress,
      to: createAddressFromString(to),
      data: hexToBytes(data.slice(2)),
      gasLimit: GAS_LIMIT,
      skipBalance: true,
      block: this.block(),
    });
    const exec = result.execResult;
    return { output: toHex(exec.returnValue), reverted: exec.exceptionError !== undefined };
  }
}
