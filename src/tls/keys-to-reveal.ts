/**
 * The prover's side of proxy mode: from our own TLS 1.3 client's exchange, the server's traffic secrets and the
 * client's epochs (record key and IV of the revealed ones, never a client traffic secret); or from the TLS client's key log (NSS format, "LABEL <client_random> <secret>"
 * per line, as Node/Bun's `keylog` event gives it) and the relayed bytes, the keys to reveal to the notary. Only
 * lines for this connection's client random count. TLS 1.3: the traffic secrets; TLS 1.2: the write keys and IVs
 * cut from the key block, so the master secret never leaves the prover.
 */
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { AppError } from "../errors.ts";
import { keyBlock12 } from "./key-schedule.ts";
import { type RelayedBytes, readHellos } from "./session-start.ts";
import type { RevealedKeys } from "./revealed-keys.ts";
import type { Tls13Exchange } from "./client/exchange.ts";

function keyLogSecrets(lines: readonly string[], clientRandomHex: string): Map<string, string> {
  const secrets = new Map<string, string>();
  for (const line of lines) {
    const [label, random, secret] = line.trim().split(/\s+/);
    if (label && secret && /^[0-9a-f]+$/i.test(secret) && random?.toLowerCase() === clientRandomHex) secrets.set(label, secret.toLowerCase());
  }
  return secrets;
}

/** What an exchange over our own TLS 1.3 client (client/exchange.ts) reveals. */
export function keysOfEpochExchange(exchange: Pick<Tls13Exchange, "serverSecrets" | "clientEpochs">): RevealedKeys {
  return {
    version: "TLS1.3",
    serverHandshakeTrafficSecret: bytesToHex(exchange.serverSecrets.handshake),
    serverApplicationTrafficSecret: bytesToHex(exchange.serverSecrets.application),
    clientEpochs: exchange.clientEpochs.map((epoch) =>
      epoch.revealed ? { records: epoch.records, key: bytesToHex(epoch.keys.key), iv: bytesToHex(epoch.keys.iv) } : { records: epoch.records },
    ),
  };
}

/** The master secret of a TLS 1.2 connection (hex), for a request revealed whole (verify-tls12-master.ts). */
export function tls12MasterSecret(keylogLines: readonly string[], bytes: RelayedBytes): string {
  const start = readHellos(bytes);
  if (start.suite.version !== "TLS1.2") throw new AppError("transcript_invalid", "the connection is not TLS 1.2: it has no master secret to reveal");
  const secret = keyLogSecrets(keylogLines, bytesToHex(start.clientHello.random)).get("CLIENT_RANDOM");
  if (!secret) throw new AppError("transcript_invalid", "the TLS key log has no CLIENT_RANDOM for this connection");
  return secret;
}

export function keysToReveal(keylogLines: readonly string[], bytes: RelayedBytes, revealClient: boolean): RevealedKeys {
  const start = readHellos(bytes);
  const secrets = keyLogSecrets(keylogLines, bytesToHex(start.clientHello.random));
  const need = (label: string): string => {
    const secret = secrets.get(label);
    if (!secret) throw new AppError("transcript_invalid", `the TLS key log has no ${label} for this connection`);
    return secret;
  };
  if (start.suite.version === "TLS1.3") {
    return {
      version: "TLS1.3",
      serverHandshakeTrafficSecret: need("SERVER_HANDSHAKE_TRAFFIC_SECRET"),
      serverApplicationTrafficSecret: need("SERVER_TRAFFIC_SECRET_0"),
      ...(revealClient
        ? { clientHandshakeTrafficSecret: need("CLIENT_HANDSHAKE_TRAFFIC_SECRET"), clientApplicationTrafficSecret: need("CLIENT_TRAFFIC_SECRET_0") }
        : {}),
    };
  }
  const block = keyBlock12(start.suite, hexToBytes(need("CLIENT_RANDOM")), start.clientHello.random, start.serverHello.random);
  return {
    version: "TLS1.2",
    serverWriteKey: bytesToHex(block.server.key),
    serverWriteIv: bytesToHex(block.server.iv),
    ...(revealClient ? { clientWriteKey: bytesToHex(block.client.key), clientWriteIv: bytesToHex(block.client.iv) } : {}),
  };
}
