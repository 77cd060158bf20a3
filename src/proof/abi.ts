/**
 * Solidity's ABI encoding of a call, for the few types our contracts take (static words, bytes and strings, tuples,
 * dynamic arrays): what a wallet sends, so that an operator can send a registry call with any tool (`cli notary
 * calldata`). The rules: each value of a tuple takes one 32-byte word in its head, in place when static, else as
 * the offset of its tail; a dynamic array is its length, then its items encoded as a tuple.
 */
import { keccak256 } from "../core/keccak/index.ts";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

export type AbiType =
  | { kind: "uint"; bits: number }
  | { kind: "bool" }
  | { kind: "address" }
  /** bytesN: N bytes, left-aligned in their word. */
  | { kind: "fixed"; size: number }
  | { kind: "bytes" }
  | { kind: "string" }
  | { kind: "tuple"; components: readonly AbiType[] }
  | { kind: "array"; item: AbiType };

/** A value of an AbiType: numbers and bigints for uint, 0x hex for address and byte types (or their bytes). */
export type AbiValue = number | bigint | boolean | string | Uint8Array | readonly AbiValue[];

/** The type as a function signature writes it. */
export function typeText(type: AbiType): string {
  switch (type.kind) {
    case "uint":
      return `uint${type.bits}`;
    case "fixed":
      return `bytes${type.size}`;
    case "tuple":
      return `(${type.components.map(typeText).join(",")})`;
    case "array":
      return `${typeText(type.item)}[]`;
    default:
      return type.kind;
  }
}

const isDynamic = (type: AbiType): boolean =>
  type.kind === "bytes" || type.kind === "string" || type.kind === "array" || (type.kind === "tuple" && type.components.some(isDynamic));

const bytesOf = (value: AbiValue): Uint8Array => (value instanceof Uint8Array ? value : hexToBytes(String(value).replace(/^0x/, "")));

/** One word holding `n`, big-endian. */
function uintWord(n: bigint): Uint8Array {
  if (n < 0n || n >= 1n << 256n) throw new RangeError(`ABI: ${n} does not fit an unsigned word`);
  return hexToBytes(n.toString(16).padStart(64, "0"));
}

/** Bytes padded on the right to whole words. */
const padded = (bytes: Uint8Array): Uint8Array => concatBytes(bytes, new Uint8Array((32 - (bytes.length % 32)) % 32));

function encodeValue(type: AbiType, value: AbiValue): Uint8Array {
  switch (type.kind) {
    case "uint":
      return uintWord(BigInt(value as number | bigint));
    case "bool":
      return uintWord(value ? 1n : 0n);
    case "address":
      return concatBytes(new Uint8Array(12), bytesOf(value));
    case "fixed":
      return padded(bytesOf(value).subarray(0, type.size));
    case "bytes":
    case "string": {
      const bytes = type.kind === "string" ? utf8ToBytes(String(value)) : bytesOf(value);
      return concatBytes(uintWord(BigInt(bytes.length)), padded(bytes));
    }
    case "tuple":
      return encodeTuple(type.components, value as readonly AbiValue[]);
    case "array": {
      const items = value as readonly AbiValue[];
      return concatBytes(uintWord(BigInt(items.length)), encodeTuple(items.map(() => type.item), items));
    }
  }
}

/** A tuple: the heads (static values, or offsets of dynamic ones from the tuple's start), then the tails. */
export function encodeTuple(types: readonly AbiType[], values: readonly AbiValue[]): Uint8Array {
  if (types.length !== values.length) throw new TypeError(`ABI: ${types.length} types for ${values.length} values`);
  const encoded = types.map((type, i) => encodeValue(type, values[i]!));
  const headSize = types.reduce((size, type, i) => size + (isDynamic(type) ? 32 : encoded[i]!.length), 0);
  const heads: Uint8Array[] = [];
  const tails: Uint8Array[] = [];
  let offset = headSize;
  types.forEach((type, i) => {
    if (!isDynamic(type)) return void heads.push(encoded[i]!);
    heads.push(uintWord(BigInt(offset)));
    tails.push(encoded[i]!);
    offset += encoded[i]!.length;
  });
  return concatBytes(...heads, ...tails);
}

/** The call's data: the selector (keccak256 of `name(types)`, 4 bytes) and the arguments, 0x hex. */
export function encodeCall(name: string, types: readonly AbiType[], values: readonly AbiValue[]): string {
  const selector = keccak256(`${name}(${types.map(typeText).join(",")})`).subarray(0, 4);
  return `0x${bytesToHex(concatBytes(selector, encodeTuple(types, values)))}`;
}
