import { Duplex } from "node:stream";
import { type ConnectionOptions, connect } from "node:tls";
import type { Relay, RelayLimits } from "../../../../src/notary/proxy-mode/relay.ts";
import { openRelay } from "../../../../src/notary/proxy-mode/relay.ts";
import type { RelayedSession } from "../../../../src/notary/proxy-mode/sessions.ts";
import { type RequestPart, type Tls13Exchange, duplexTransport, runTls13Exchange } from "../../../../src/tls/client/exchange.ts";
import { TARGET_HOST } from "../../../../testkit/tls-fixture.ts";

/** Room enough for the tests' exchanges. */
export const ROOMY: RelayLimits = { maxToTarget: 64 * 1024, maxFromTarget: 256 * 1024 };

export interface RelayedThrough {
  relay: Relay;
  /** The session as an attestation takes it (sessions.ts, takeRelayed). */
  relayed: RelayedSession;
  keylog: string[];
  /** The plaintext the client read. */
  answer: Uint8Array;
}

/** A relay to the target at `port`, and the client's end of it as a stream. */
async function relayWire(port: number, limits: RelayLimits): Promise<{ relay: Relay; wire: Duplex }> {
  const relay = await openRelay("127.0.0.1", port, 2_000, limits);
  const wire = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      relay.toTarget(new Uint8Array(chunk));
      done();
    },
  });
  relay.attach({ send: (data) => wire.push(data), close: () => wire.push(null) });
  return { relay, wire };
}

/**
 * One exchange as a prover makes it through the notary's own relay (relay.ts), without the WebSocket between them:
 * a node:tls client (the prover's) whose bytes go to `relay.toTarget` and which reads what the relay passes on. It
 * writes `request`, reads until the target ends the connection (or the relay closes), then ends its side as a
 * closing relay socket does (`proverClosed`).
 */
export async function exchangeThroughRelay(port: number, request: string, client: ConnectionOptions, limits: RelayLimits = ROOMY): Promise<RelayedThrough> {
  const { relay, wire } = await relayWire(port, limits);
  const keylog: string[] = [];
  const answer: Uint8Array[] = [];
  const tls = connect({ socket: wire, servername: TARGET_HOST, ...client });
  tls.on("keylog", (line: Buffer) => keylog.push(line.toString("latin1").trim()));
  tls.on("data", (chunk: Buffer) => answer.push(new Uint8Array(chunk)));
  tls.on("error", () => {});
  // A server that speaks first may have ended before the request is written.
  const ended = new Promise<void>((resolve) => tls.once("end", resolve));
  await new Promise<void>((resolve, reject) => {
    tls.once("secureConnect", resolve);
    tls.once("error", reject);
    tls.once("close", () => reject(new Error("the connection closed during the handshake")));
  });
  tls.write(request);
  await ended;
  relay.proverClosed();
  await relay.ended;
  return {
    relay,
    relayed: { serverName: TARGET_HOST, port, bytes: relay.recorded(), events: relay.events() },
    keylog,
    answer: new Uint8Array(Buffer.concat(answer)),
  };
}

/**
 * One exchange through the relay with our TLS 1.3 client, the request written in `parts` (hidden ones in epochs whose
 * keys stay with the client), the answer read to the server's close; then the client's side ends.
 */
export async function epochExchangeThroughRelay(port: number, parts: RequestPart[], caPem: string): Promise<{ relay: Relay; relayed: RelayedSession; exchange: Tls13Exchange }> {
  const { relay, wire } = await relayWire(port, ROOMY);
  const exchange = await runTls13Exchange(duplexTransport(wire), parts, { serverName: TARGET_HOST, trustAnchorsPem: [caPem], responseTimeoutMs: 2_000, maxRecvBytes: 1 << 20 });
  relay.proverClosed();
  await relay.ended;
  return { relay, relayed: { serverName: TARGET_HOST, port, bytes: relay.recorded(), events: relay.events() }, exchange };
}
