/** The node's own secp256k1 key: it signs what the node publishes and the answers it vouches for. */
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { AppError } from "../core/errors.ts";
import { makePrivateDir } from "../base/private-files.ts";
import { addressOfSecretKey, type Address } from "../core/eth-signature.ts";

export interface NodeKey {
  /** Lower-case 0x Ethereum address: the node's publisherId and the address `/info` shows. */
  readonly address: Address;
  readonly secretKey: Uint8Array;
}

export const NODE_KEY_FILE = "node.key";

/** Reads `<dataDir>/node.key` (hex secret key), creating it with mode 0600 when missing. */
export function loadNodeKey(dataDir: string): NodeKey {
  const path = join(dataDir, NODE_KEY_FILE);
  makePrivateDir(dataDir);
  let hex: string;
  try {
    hex = readFileSync(path, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new AppError("file_unreadable", `cannot read ${path}`);
    hex = createKeyFile(path);
  }
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new AppError("config_invalid", `${path} does not hold a 32-byte hex key`);
  const secretKey = hexToBytes(hex);
  if (!secp256k1.utils.isValidSecretKey(secretKey)) throw new AppError("config_invalid", `${path} holds an invalid secp256k1 key`);
  return { address: addressOfSecretKey(secretKey), secretKey };
}

function createKeyFile(path: string): string {
  const hex = bytesToHex(secp256k1.utils.randomSecretKey());
  let fd: number;
  try {
    // "wx": exclusive create, so two processes starting at once cannot both write a key.
    fd = openSync(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return readFileSync(path, "utf8").trim();
    throw new AppError("file_unreadable", `cannot create ${path}`);
  }
  try {
    writeSync(fd, `${hex}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return hex;
}
