/**
 * MPC mode's verified transcript: what the notary's Verifier verified, the bytes the prover revealed to it (the rest
 * stays with the prover and out of the proof), dated by the notary's own observation of the session's socket.
 *
 * Times: `connectionTime` is when the socket started carrying the exchange: its attachment, or the end of its
 * longest quiet spell of 2 s or more (a warm session's wait between setup and request; traffic.ts).
 * `responseTime` is when the Verifier finished: the exchange was over by then. The MPC engine's own
 * `connection_info.time` is the session's setup, seconds to minutes earlier for a warm session: not used.
 * The notary sees no TCP connection, hence no port, no ALPN and no close_notify: an answer framed by the
 * connection's end cannot be shown complete.
 * The request is held to the request rule (src/proof/request-rule.ts): the notary sees hidden request bytes as
 * commitments only, so a revealed byte after a hidden one is not proven to be what the server read. A hidden span is
 * bounded by the session's send limit, the request's own bound.
 */
import { AppError } from "../../core/errors.ts";
import { tlsServerName } from "../../core/server-name.ts";
import type { ByteRange } from "../../core/transcript.ts";
import { mergeRanges } from "../../core/ranges.ts";
import type { VerifiedMpcSession } from "./sessions.ts";
import type { SeenDirection, VerifiedTranscript } from "../verified-transcript.ts";

const seenDirection = (bytes: number[], authed: readonly ByteRange[], length: number): SeenDirection => ({
  length,
  bytes: Uint8Array.from(bytes),
  seen: mergeRanges(authed),
});

export function mpcTranscript({ output, activeSince, verifiedAt }: VerifiedMpcSession, maxSentData: number): VerifiedTranscript {
  if (!output.server_name) throw new AppError("session_failed", "the prover did not reveal the server identity");
  // Signed as TLS names the host, as in proxy mode: a trailing dot the prover gave goes (src/core/server-name.ts).
  const serverName = tlsServerName(output.server_name);
  if (serverName === null) throw new AppError("session_failed", "the prover revealed a server name with an empty label");
  if (!output.transcript) throw new AppError("session_failed", "the prover revealed no transcript");
  const { sent, recv } = output.connection_info.transcript_length;
  return {
    mode: "mpc",
    serverName,
    tlsVersion: output.connection_info.version === "V1_3" ? "TLS1.3" : "TLS1.2",
    connectionTime: Math.floor(activeSince / 1000),
    responseTime: Math.floor(verifiedAt / 1000),
    sent: seenDirection(output.transcript.sent, output.transcript.sent_authed, sent),
    recv: seenDirection(output.transcript.recv, output.transcript.recv_authed, recv),
    hiddenBy: "prover",
    connectionEnd: { closed: false, why: "an MPC notary does not see how the connection ended" },
    requestRule: { maxHiddenSpanBytes: maxSentData },
  };
}
