/**
 * Proxy mode's exchange with a TLS 1.2 target (TLS 1.3 ones get our own client, src/tls/client/): an ordinary TLS
 * client (`node:tls`) over the notary's relay, one HTTP/1.1 request with `Connection: close`, the answer read until
 * the server closes. It offers TLS 1.3 too: a target behind servers of mixed versions may still choose it, and its
 * keys are then revealed as TLS 1.3's (the request hidden unless revealed whole). The key-log lines it collects are what the prover derives the revealed keys
 * from; they never leave this process as they are.
 */
import { isIP } from "node:net";
import type { Duplex } from "node:stream";
import { type TLSSocket, connect } from "node:tls";
import { AppError } from "../../core/errors.ts";

export interface TlsExchangeOptions {
  serverName: string;
  /** The request as sent (src/http1/request.ts). */
  request: Uint8Array;
  /** Trusted roots, the notary's set (src/engine/trust-anchor.ts). */
  trustAnchorsPem: readonly string[];
  /** Most answer bytes (plaintext, headers included): T-MAX-RECV-DATA, else PROVER_PROXY_MAX_RECV_DATA. */
  maxRecvBytes: number;
  /** The setting that fixed maxRecvBytes, named in the refusal. */
  maxRecvSetting: string;
  /** Longest silence from the target while an answer is owed. */
  responseTimeoutMs: number;
}

export interface TlsExchange {
  sent: Uint8Array;
  recv: Uint8Array;
  /** NSS key-log lines, in the order the TLS client wrote them. */
  keylog: string[];
}

const CERTIFICATE_ERROR = /CERT|VERIFY|ALTNAME|SELF_SIGNED|ISSUER/;
/** A record whose authentication tag did not match: bytes were changed between the target and the prover. */
const RECORD_FORGED = /BAD_RECORD_MAC|DECRYPTION_FAILED/;

/** The AppError for a failed TLS connection: the chain refused, the handshake failed, or the connection broke. */
function tlsFailure(error: Error & { code?: string }, secure: boolean): AppError {
  const code = error.code ?? "";
  if (CERTIFICATE_ERROR.test(code)) return new AppError("tls_untrusted", `the target's certificate was refused (${code})`, undefined, error);
  if (!secure) return new AppError("tls_unsupported", "the TLS handshake with the target failed", undefined, error);
  if (RECORD_FORGED.test(`${code} ${error.message}`)) {
    return new AppError("target_request_failed", "a TLS record of the target's answer failed its integrity check: it was changed on its way", undefined, error);
  }
  return new AppError("target_request_failed", "the connection to the target broke before its answer ended", undefined, error);
}

export function runTlsExchange(relay: Duplex, options: TlsExchangeOptions): Promise<TlsExchange> {
  return new Promise((resolve, reject) => {
    const keylog: string[] = [];
    const chunks: Buffer[] = [];
    let received = 0;
    let secure = false;
    const socket: TLSSocket = connect({
      socket: relay,
      // SNI carries host names only.
      servername: isIP(options.serverName) ? undefined : options.serverName,
      ALPNProtocols: ["http/1.1"],
      ca: [...options.trustAnchorsPem],
    });
    const fail = (error: AppError) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(options.responseTimeoutMs, () =>
      fail(new AppError("target_timeout", `the target was silent for ${options.responseTimeoutMs} ms`)),
    );
    socket.on("keylog", (line: Buffer) => keylog.push(line.toString("latin1").trim()));
    socket.once("secureConnect", () => {
      secure = true;
      socket.write(options.request);
    });
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
      if (received > options.maxRecvBytes) {
        return fail(new AppError("response_too_large", `the answer exceeds ${options.maxRecvBytes} bytes (${options.maxRecvSetting})`));
      }
      chunks.push(chunk);
    });
    socket.on("error", (error) => fail(tlsFailure(error, secure)));
    socket.once("end", () => {
      socket.destroy();
      if (!secure) return reject(new AppError("tls_unsupported", "the target closed the connection during the TLS handshake"));
      // One copy into the answer's own buffer; the chunks go with this closure.
      const recv = new Uint8Array(received);
      let at = 0;
      for (const chunk of chunks.splice(0)) {
        recv.set(chunk, at);
        at += chunk.length;
      }
      resolve({ sent: options.request, recv, keylog });
    });
  });
}
