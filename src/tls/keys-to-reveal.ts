/**
 * The prover's side of proxy mode: what it reveals to the notary. From our own TLS 1.3 client's exchange: the
 * server's traffic secrets and, unless the request stays hidden, the client's epochs (record key and IV of the
 * revealed ones, never a client traffic secret). From a `node:tls` client's key log (NSS format, "LABEL
 * <client_random> <secret>" per line, as Node/Bun's `keylog` event gives it; only lines for this connection's client
 * random count) and the relayed hellos: TLS 1.3, the traffic secrets; TLS 1.2, the server's write key and IV cut from
 * the key block (the master secret stays with the prover), or the master secret itself when the request is revealed.
 */
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { AppError } from "../core/errors.ts";
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

/** What an exchange over our own TLS 1.3 client (client/exchange.ts) reveals: its epochs too unless `revealClient` is false. */
export function keysOfEpochExchange(exchange: Pick<Tls13Exchange, "serverSecrets" | "clientEpochs">, revealClient = true): RevealedKeys {
  const server = {
    version: "TLS1.3" as const,
    serverHandshakeTrafficSecret: bytesToHex(exchange.serverSecrets.handshake),
    serverApplicationTrafficSecret: bytesToHex(exchange.serverSecrets.application),
  };
  if (!revealClient) return server;
  return {
    ...server,
    clientEpochs: exchange.clientEpochs.map((epoch) =>
      epoch.revealed ? { records: epoch.records, key: bytesToHex(epoch.keys.key), iv: bytesToHex(epoch.keys.iv) } : { records: epoch.records },
    ),
  };
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
  if (revealClient) return { version: "TLS1.2", masterSecret: need("CLIENT_RANDOM") };
  const block = keyBlock12(start.suite, hexToBytes(need("CLIENT_RANDOM")), start.clientHello.random, start.serverHello.random);
  return { version: "TLS1.2", serverWriteKey: bytesToHex(block.server.key), serverWriteIv: bytesToHex(block.server.iv) };
}
