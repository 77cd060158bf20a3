import { trustAnchors } from "../src/engine/trust-anchor.ts";
import { serializeRequest } from "../src/http1/request.ts";
import type { RelaySocket } from "../src/prover/proxy-mode/relay-socket.ts";
import { type TlsExchange, runTlsExchange } from "../src/prover/proxy-mode/tls-exchange.ts";
import { tlsFixture } from "./env.ts";
import { TARGET_HOST } from "./tls-fixture.ts";

/** A GET of `path` from TARGET_HOST with the prover's node:tls client over a proxy-mode relay socket (up to 1 MiB back). */
export function getOverRelay(relay: RelaySocket, path: string, responseTimeoutMs: number): Promise<TlsExchange> {
  return runTlsExchange(relay.duplex, {
    serverName: TARGET_HOST,
    request: serializeRequest({ method: "GET", pathAndQuery: path, headers: [["host", TARGET_HOST], ["connection", "close"]], body: undefined }),
    trustAnchorsPem: trustAnchors(tlsFixture().caPem),
    maxRecvBytes: 1024 * 1024,
    maxRecvSetting: "PROVER_PROXY_MAX_RECV_DATA",
    responseTimeoutMs,
  });
}
