/**
 * A prover that plays by no rule but the notary's wire protocol (src/protocol/notary.ts): it opens a proxy session
 * (POST /proxy-session), runs its own TLS client over the relay WebSocket (/relay): node:tls, or the project's TLS 1.3
 * client writing whatever request parts it is given in epochs; decides itself what to send, when to stop and which
 * keys and redactions to reveal, then asks for the attestation (POST /proxy-session/{id}/attestation) and returns the
 * notary's raw answer. None of the honest prover's checks run here: what the notary refuses, it refuses on its own.
 */
import { Duplex } from "node:stream";
import { type TLSSocket, connect } from "node:tls";
import type { ByteRange } from "../src/core/transcript.ts";
import type { DeclaredRedaction } from "../src/proof/format.ts";
import { type RequestPart, type Tls13Exchange, duplexTransport, runTls13Exchange } from "../src/tls/client/exchange.ts";
import { type RelayedBytes, type RevealedKeys, keysOfEpochExchange, keysToReveal } from "../src/tls/verify-session.ts";

export interface MaliciousSessionOptions {
  notaryUrl: string;
  /** Sent as a bearer token when the notary has a whitelist. */
  apiKey?: string;
  serverName: string;
  port: number;
  /** The roots the TLS client trusts (the test CA). */
  caPem: string;
  /** Protocols offered by ALPN (none unless given). */
  alpn?: string[];
}

/** The notary's answer to an attestation request: its status and JSON body (a proof, or `{ error }`). */
export interface NotaryAnswer {
  status: number;
  body: { error?: { code: string; message: string } } & Record<string, unknown>;
}

export interface AttestationChoices {
  /** Reveal the client's keys, so that the request enters the proof. */
  revealRequest?: boolean;
  redactions?: DeclaredRedaction[];
  /** Keys to send instead of the real ones. */
  keys?: RevealedKeys;
  requestId?: string;
  /** `T-CLAIM` entries, a claim salt and a recipient, sent as the attestation request's own fields. */
  claims?: string[];
  claimSalt?: string;
  recipient?: string;
}

/** The attestation request's claim fields, as the choices give them. */
const claimFields = ({ claims, claimSalt, recipient }: AttestationChoices) => ({
  ...(claims === undefined ? {} : { claims }),
  ...(claimSalt === undefined ? {} : { claimSalt }),
  ...(recipient === undefined ? {} : { recipient }),
});

export interface MaliciousSession {
  sessionId: string;
  tls: TLSSocket;
  /** The plaintext the TLS client has read so far. */
  received(): Uint8Array;
  /** When the relay's first byte from the target arrived, by this process's clock (ms since the epoch). */
  serverHelloSeenAt(): number;
  /** Writes `text` as application data. */
  send(text: string): void;
  /** Resolves once what was read satisfies `done`; rejects after `timeoutMs`. */
  readUntil(done: (received: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves once the relay closed (the target closed its connection, or the notary ended the session). */
  readonly relayClosed: Promise<void>;
  /** Closes the relay WebSocket now, whatever the target still had to send. */
  closeRelay(): void;
  /** The keys an honest prover reveals, from its key log and what the relay carried. */
  honestKeys(revealRequest: boolean): RevealedKeys;
  attest(choices?: AttestationChoices): Promise<NotaryAnswer>;
}

const authHeaders = (apiKey?: string): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {});

async function postJson(url: string, body: unknown, apiKey?: string): Promise<NotaryAnswer> {
  const text = JSON.stringify(body);
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...authHeaders(apiKey) }, body: text });
  return { status: response.status, body: (await response.json()) as NotaryAnswer["body"] };
}

const join = (chunks: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(chunks));

/** A proxy session's relay WebSocket as a Duplex, both directions recorded as they passed. */
interface RelayLink {
  sessionId: string;
  duplex: Duplex;
  relayed(): RelayedBytes;
  firstByteAt(): number;
  readonly closed: Promise<void>;
  close(): void;
}

async function openRelayLink(options: MaliciousSessionOptions): Promise<RelayLink> {
  const created = await postJson(`${options.notaryUrl}/proxy-session`, { serverName: options.serverName, port: options.port }, options.apiKey);
  if (created.status !== 200) throw new Error(`POST /proxy-session answered ${created.status}: ${JSON.stringify(created.body)}`);
  const sessionId = String(created.body.sessionId);
  const ws = new WebSocket(`${options.notaryUrl.replace(/^http/, "ws")}/relay?sessionId=${sessionId}`);
  ws.binaryType = "arraybuffer";
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("the relay WebSocket did not open"));
  });
  const toServer: Uint8Array[] = [];
  const fromServer: Uint8Array[] = [];
  let firstByteAt = 0;
  let markClosed!: () => void;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      const bytes = new Uint8Array(chunk);
      toServer.push(bytes);
      if (ws.readyState === WebSocket.OPEN) ws.send(bytes);
      done();
    },
  });
  ws.onmessage = (event) => {
    const bytes = new Uint8Array(event.data as ArrayBuffer);
    firstByteAt ||= Date.now();
    fromServer.push(bytes);
    duplex.push(bytes);
  };
  ws.onclose = () => {
    duplex.push(null);
    markClosed();
  };
  return {
    sessionId,
    duplex,
    relayed: () => ({ clientToServer: join(toServer), serverToClient: join(fromServer) }),
    firstByteAt: () => firstByteAt,
    closed,
    close: () => ws.close(),
  };
}

const attestation = (options: MaliciousSessionOptions, sessionId: string, request: unknown): Promise<NotaryAnswer> =>
  postJson(`${options.notaryUrl}/proxy-session/${sessionId}/attestation`, request, options.apiKey);

/** Opens a proxy session and completes a TLS handshake with the target through the notary's relay. */
export async function openMaliciousSession(options: MaliciousSessionOptions): Promise<MaliciousSession> {
  const link = await openRelayLink(options);
  const keylog: string[] = [];
  const plaintext: Uint8Array[] = [];
  const readers = new Set<() => void>();
  const tls = connect({ socket: link.duplex, servername: options.serverName, ca: [options.caPem], ...(options.alpn ? { ALPNProtocols: options.alpn } : {}) });
  tls.on("keylog", (line: Buffer) => keylog.push(line.toString("latin1").trim()));
  tls.on("data", (chunk: Buffer) => {
    plaintext.push(new Uint8Array(chunk));
    for (const reader of readers) reader();
  });
  tls.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    tls.once("secureConnect", resolve);
    tls.once("error", reject);
  });
  const received = () => join(plaintext);
  return {
    sessionId: link.sessionId,
    tls,
    received,
    serverHelloSeenAt: link.firstByteAt,
    send: (text) => void tls.write(text),
    readUntil(done, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const text = Buffer.from(received()).toString("latin1");
          if (!done(text)) return;
          readers.delete(check);
          clearTimeout(timer);
          resolve(text);
        };
        const timer = setTimeout(() => {
          readers.delete(check);
          reject(new Error(`the expected answer did not come in ${timeoutMs} ms; read so far: ${JSON.stringify(Buffer.from(received()).toString("latin1").slice(0, 300))}`));
        }, timeoutMs);
        readers.add(check);
        check();
      });
    },
    relayClosed: link.closed,
    closeRelay: link.close,
    honestKeys: (revealRequest) => keysToReveal(keylog, link.relayed(), revealRequest),
    attest(choices = {}) {
      return attestation(options, link.sessionId, {
        requestId: choices.requestId ?? crypto.randomUUID(),
        keys: choices.keys ?? keysToReveal(keylog, link.relayed(), choices.revealRequest ?? false),
        redactions: choices.redactions ?? [],
        ...claimFields(choices),
      });
    },
  };
}

/** What a session whose request went out in epochs can claim; each left out is the honest value. */
export interface EpochAttestationChoices {
  keys?: RevealedKeys;
  redactions?: DeclaredRedaction[];
  requestId?: string;
}

export interface EpochSession {
  sessionId: string;
  exchange: Tls13Exchange;
  /** The request's bytes its hidden epochs carried. */
  hiddenSpans: ByteRange[];
  /** The keys an honest prover reveals: the server's secrets and every epoch's layout, the revealed ones' key and IV. */
  honestKeys: Extract<RevealedKeys, { version: "TLS1.3" }>;
  /** What the relay carried, as this side saw it. */
  relayed(): RelayedBytes;
  attest(choices?: EpochAttestationChoices): Promise<NotaryAnswer>;
}

/**
 * One exchange with our TLS 1.3 client through the notary's relay, `parts` written in epochs as given (no check of
 * where the hidden ones lie), the answer read to the server's close; the relay is closed before this resolves.
 */
export async function runEpochSession(options: MaliciousSessionOptions, parts: RequestPart[]): Promise<EpochSession> {
  const link = await openRelayLink(options);
  const exchange = await runTls13Exchange(duplexTransport(link.duplex), parts, {
    serverName: options.serverName,
    trustAnchorsPem: [options.caPem],
    responseTimeoutMs: 10_000,
    maxRecvBytes: 1 << 20,
  });
  // The client read the answer to the server's close, then sent its close_notify: the relay ends with it.
  link.close();
  await link.closed;
  const hiddenSpans = exchange.clientEpochs.filter((epoch) => !epoch.revealed && epoch.sent.end > epoch.sent.start).map((epoch) => ({ ...epoch.sent }));
  const declared: DeclaredRedaction[] = hiddenSpans.length === 0 ? [] : [{ pattern: "req:header:hidden", matched: true, spans: hiddenSpans.map((span) => ({ direction: "sent", ...span })) }];
  const honestKeys = keysOfEpochExchange(exchange) as EpochSession["honestKeys"];
  return {
    sessionId: link.sessionId,
    exchange,
    hiddenSpans,
    honestKeys,
    relayed: link.relayed,
    attest: (choices = {}) =>
      attestation(options, link.sessionId, { requestId: choices.requestId ?? crypto.randomUUID(), keys: choices.keys ?? honestKeys, redactions: choices.redactions ?? declared, ...claimFields(choices) }),
  };
}
