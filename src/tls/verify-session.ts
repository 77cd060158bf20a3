/**
 * Proxy mode's transcript verifier: what a notary runs on the bytes it relayed between a prover and a TLS server,
 * with the keys the prover reveals. Pure: no network, no clock but `expect.now`.
 */

export type TlsVersionName = "TLS1.2" | "TLS1.3";
/** Both directions of one TCP connection, exactly as the notary relayed them. */
export interface RelayedBytes {
  clientToServer: Uint8Array;
  serverToClient: Uint8Array;
}
/** What the prover reveals. Hex strings. Client keys only when the client asked for the request to be revealed. */
export type RevealedKeys =
  | {
      version: "TLS1.3";
      serverHandshakeTrafficSecret: string;
      serverApplicationTrafficSecret: string;
      clientHandshakeTrafficSecret?: string;
      clientApplicationTrafficSecret?: string;
    }
  | { version: "TLS1.2"; serverWriteKey: string; serverWriteIv: string; clientWriteKey?: string; clientWriteIv?: string };
export interface SessionExpectations {
  serverName: string;
  trustAnchorsPem: readonly string[];
  now: Date;
}
export interface VerifiedSession {
  tlsVersion: TlsVersionName;
  cipherSuite: string;
  serverName: string;
  /** Every application-data byte the server sent, decrypted and authenticated, in order (the HTTP answer). */
  recv: Uint8Array;
  /** The client's application data when client keys were revealed and checked; else null. */
  sent: Uint8Array | null;
  /** Length of the client's application data (exact when sent is known; else computed from record sizes). */
  sentLength: number;
  /** Seconds since the epoch: when the handshake was seen (expectations.now). */
  connectionTime: number;
}

export function verifyRelayedSession(bytes: RelayedBytes, keys: RevealedKeys, expect: SessionExpectations): VerifiedSession {
  void bytes;
  void keys;
  void expect;
  throw new Error("verifyRelayedSession: not implemented yet");
}

/** Prover side: from Node/Bun `keylog` lines (NSS format) and the relayed bytes, the keys to reveal. */
export function keysToReveal(keylogLines: readonly string[], bytes: RelayedBytes, revealClient: boolean): RevealedKeys {
  void keylogLines;
  void bytes;
  void revealClient;
  throw new Error("keysToReveal: not implemented yet");
}
