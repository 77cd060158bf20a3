/**
 * The notary's seam for proof modes. A mode contributes only what differs: the schemas of its session and
 * attestation requests, how its sessions are created, its socket, and how an exchange's transcript is obtained and
 * verified (a VerifiedTranscript). The rest is one for every mode: the routes declared once over the modes from
 * those schemas (session-routes.ts, with src/http/route.ts; sockets.ts), the refusals before a body is read
 * (admission.ts), the attestation path and its one proof-body builder (attestation.ts, attest.ts).
 *
 * The built-in modes' backends are built by the composition root (src/app/notary.ts); a further mode's backend is
 * given to the notary server as an option (`furtherModes`), made for it with its context (docs/design.md, "How to add
 * a mode").
 */
import type * as v from "valibot";
import type { SessionTraffic } from "../core/session-traffic.ts";
import type { ErrorCode } from "../core/errors.ts";
import type { Logger } from "../base/log.ts";
import type { ModeFacts } from "../proof/modes.ts";
import type { AttestationRequest } from "../protocol/notary.ts";
import type { VerifiedTranscript } from "./verified-transcript.ts";

/** What a prover's accepted socket carries: its session, and the mode whose socket it is. */
export interface NotarySocketData {
  sessionId: string;
  mode: string;
}
/**
 * What a mode uses of a prover's socket: a Bun ServerWebSocket, or the embedded notary's socket in its prover's
 * process (sockets.ts, `inProcessSocket`).
 */
export interface NotarySocket {
  readonly data: NotarySocketData;
  /** 1 while open. */
  readonly readyState: number;
  /** Bytes sent (> 0), -1 when queued behind earlier ones (backpressure), 0 when dropped (the socket is closing). */
  sendBinary(data: Uint8Array): number;
  close(code?: number, reason?: string): void;
}

/** A session just opened: its id, and what the log says of it (never a secret). */
export interface OpenedSession {
  sessionId: string;
  logFields?: Record<string, unknown>;
}

/** A mode's WebSocket with the prover (MPC's, proxy mode's relay): the notary's sockets hand it their events. */
export interface ModeSocket {
  /** Whether a socket may open for this session now; an unknown or used session is refused with 404. */
  accepts(sessionId: string): boolean;
  /** A socket `accepts` let open, in that same turn (sockets.ts). */
  open(socket: NotarySocket): void;
  message(socket: NotarySocket, bytes: Uint8Array): void;
  /** The socket's send buffer emptied (backpressure over). */
  drain?(socket: NotarySocket): void;
  /** `code` as WebSocket close codes: 1009 means a message over the limit. */
  close(socket: NotarySocket, code?: number): void;
}

/**
 * A request body a mode reads (its session request, its attestation request): the schema its route validates it
 * with, and what the route's declaration says of it (src/http/route.ts).
 */
export interface ModeRequest<T> {
  schema: v.GenericSchema<unknown, T>;
  /** How a refusal names the body: `session request: maxSentData: ...`. */
  where: string;
  /** The codes the mode may answer with once the body is read (a target refused, no place left, a check failed). */
  errors: readonly ErrorCode[];
}

/**
 * One mode as a notary offers it. `Declared` is its attestation request (the common fields and what it adds),
 * `Requested` its session request.
 */
export interface NotaryMode<Declared extends AttestationRequest = AttestationRequest, Requested = unknown> {
  /** Its name and what a verifier knows of it (src/proof/modes.ts). */
  facts: ModeFacts;
  /** What opening a session does, as the OpenAPI document says it. */
  opens: string;
  sessionRequest: ModeRequest<Requested>;
  /** Opens a session for a session request its schema read. */
  open(request: Requested): OpenedSession | Promise<OpenedSession>;
  /** Ends a session that will make no proof; unknown ids are ignored. */
  release(sessionId: string): void;
  /** What a running session's socket carried so far; undefined unless it runs. A mode without it has no such route. */
  running?(sessionId: string): SessionTraffic | undefined;
  attestationRequest: ModeRequest<Declared>;
  /**
   * Takes the session for its one attestation (a second one is refused with `session_taken`), obtains its exchange
   * and verifies it: what the proof may say. `askedAt`: when the attestation was asked for, ms since the epoch.
   */
  verify(sessionId: string, declared: Declared, askedAt: number): Promise<VerifiedTranscript>;
  /** The prover's WebSocket, for a mode that has one. */
  socket?: ModeSocket;
  /** The largest request body the mode's routes take (an attestation's spans grow with the answer). */
  maxBodyBytes: number;
  /** Sessions open now (a place taken counts). */
  active(): number;
  closeAll(reason: string): void;
}

/** What the notary gives a further mode's backend when it starts. */
export interface NotaryModeContext {
  log: Logger;
  /** The notary signs under a test trust anchor (TLSN_TEST_TRUST_ANCHOR). */
  testTrustAnchor: boolean;
}

/** A mode's backend, built in or not: its facts, and how its notary side is made when a notary starts. */
export interface NotaryModeBackend {
  facts: ModeFacts;
  create(context: NotaryModeContext): NotaryMode;
}

/** The modes one notary offers, each made from its backend with the notary's context, by name. */
export class NotaryModes {
  private readonly byName = new Map<string, NotaryMode>();

  /** Each mode's `verify` is handed what its own `attestationRequest` read. */
  constructor(backends: readonly NotaryModeBackend[], context: NotaryModeContext) {
    for (const backend of backends) {
      if (this.byName.has(backend.facts.name)) throw new Error(`the notary offers a mode named ${backend.facts.name} already`);
      this.byName.set(backend.facts.name, backend.create(context));
    }
  }

  get(name: string): NotaryMode | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  all(): NotaryMode[] {
    return [...this.byName.values()];
  }

  /** Sessions open in every mode together. */
  active(): number {
    return this.all().reduce((sum, mode) => sum + mode.active(), 0);
  }
}
