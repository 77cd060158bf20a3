/**
 * What a proxy session's relay log (relay.ts) says about the exchange, read with the record positions the TLS
 * verifier found: when the target's first and last bytes passed, and whether the target ended the connection of its
 * own accord. Pure: the notary's clock entered the log when the bytes passed.
 */
import type { ConnectionEnd } from "../../http1/answer-rule.ts";
import type { DataRecords } from "../../tls/verify-session.ts";
import type { RelayEvent } from "./relay.ts";

export interface RelayTimes {
  /** When the target's first byte (its ServerHello) passed, ms since the epoch. */
  firstByteAt: number;
  /** When its last byte passed. */
  lastByteAt: number;
  /** When the target was last heard of: its last byte, or its FIN if that came later. */
  endedAt: number;
}

/** The target's times, or null when it sent nothing. */
export function relayTimes(events: readonly RelayEvent[]): RelayTimes | null {
  const bytes = events.filter((event) => event.kind === "target-bytes");
  const first = bytes[0];
  const last = bytes.at(-1);
  if (!first || !last) return null;
  const fin = events.find((event) => event.kind === "target-fin");
  return { firstByteAt: first.at, lastByteAt: last.at, endedAt: Math.max(last.at, fin?.at ?? 0) };
}

/** Index of the first event of `kind` that carried byte `offset` of its direction; -1 when none did. */
const carrying = (events: readonly RelayEvent[], kind: "prover-bytes" | "target-bytes", offset: number): number =>
  events.findIndex((event) => event.kind === kind && event.through > offset);

/**
 * Whether the target ended the connection of its own accord: its close_notify or its FIN passed the relay before
 * the prover closed its side and before any alert of the client's (a client's close_notify asks the server to close
 * at once, cutting an answer framed by the connection's end). Without all the client's records (TLS 1.3 with the
 * request hidden, or a hidden epoch, which could hold a close_notify) its alerts cannot be seen, so that cannot be said.
 */
export function connectionEnd(events: readonly RelayEvent[], server: DataRecords, client: DataRecords | null): ConnectionEnd {
  const closes = [server.closeNotifyAt === null ? -1 : carrying(events, "target-bytes", server.closeNotifyAt), events.findIndex((event) => event.kind === "target-fin")];
  const closedAt = Math.min(...closes.filter((index) => index >= 0));
  if (!Number.isFinite(closedAt)) return { closed: false, why: "the server neither sent close_notify nor closed the connection" };
  const proverEnd = events.findIndex((event) => event.kind === "prover-end");
  if (proverEnd >= 0 && proverEnd < closedAt) return { closed: false, why: "the server closed only after the prover had closed its side" };
  if (client === null) {
    return { closed: false, why: "the client's records are not all readable (TLS 1.3 with the request or a value of it hidden), so nothing shows that the client did not ask the server to close" };
  }
  const alertAt = client.closeNotifyAt === null ? -1 : carrying(events, "prover-bytes", client.closeNotifyAt);
  if (alertAt >= 0 && alertAt < closedAt) return { closed: false, why: "the client sent an alert before the server closed" };
  return { closed: true };
}
