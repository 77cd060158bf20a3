/**
 * What a proxy session's relay log says of the exchange: when the target's first and last bytes passed, and whether
 * the server ended the connection of its own accord, read with the record offsets the TLS verifier found. Logs are
 * written as the relay writes them (relay.ts): `through` counts the direction's bytes so far.
 */
import { describe, expect, test } from "bun:test";
import { connectionEnd, relayTimes } from "../../../src/notary/proxy-mode/relay-log.ts";
import type { RelayEvent } from "../../../src/notary/proxy-mode/relay.ts";

const prover = (through: number, at: number): RelayEvent => ({ kind: "prover-bytes", through, at });
const target = (through: number, at: number): RelayEvent => ({ kind: "target-bytes", through, at });
const fin = (at: number): RelayEvent => ({ kind: "target-fin", at });
const proverEnd = (at: number): RelayEvent => ({ kind: "prover-end", at });

/** The server's and client's record offsets: a close_notify at `closeNotifyAt`, or none. */
const records = (closeNotifyAt: number | null) => ({ dataStart: 0, closeNotifyAt });

describe("the relay's times", () => {
  test("the target's first and last bytes date the exchange; the prover's bytes do not", () => {
    const log = [prover(300, 1_000), target(1_200, 1_010), prover(400, 1_020), target(1_500, 1_030), target(1_800, 1_090), prover(450, 1_200)];
    expect(relayTimes(log)).toEqual({ firstByteAt: 1_010, lastByteAt: 1_090, endedAt: 1_090 });
  });

  test("a FIN after the last byte ends the exchange later; the dates of the bytes stay", () => {
    expect(relayTimes([target(100, 2_000), target(200, 2_100), fin(2_600)])).toEqual({ firstByteAt: 2_000, lastByteAt: 2_100, endedAt: 2_600 });
    // One chunk: first and last are the same.
    expect(relayTimes([prover(10, 1_000), target(100, 2_000), proverEnd(2_050)])).toEqual({ firstByteAt: 2_000, lastByteAt: 2_000, endedAt: 2_000 });
  });

  test("a target that sent nothing has no times, whatever else passed", () => {
    expect(relayTimes([])).toBeNull();
    expect(relayTimes([prover(300, 1_000), fin(1_100), proverEnd(1_200)])).toBeNull();
  });
});

describe("whether the server ended the connection itself", () => {
  test("its close_notify, in a chunk before anything of the prover's end: closed", () => {
    // The close_notify record at offset 1_450 lies in the second chunk (bytes 1_200..1_500).
    const log = [prover(300, 0), target(1_200, 1), prover(400, 2), target(1_500, 3), proverEnd(4)];
    expect(connectionEnd(log, records(1_450), records(null))).toEqual({ closed: true });
    // At the chunk's first byte too: a chunk carries bytes through-1 and below.
    expect(connectionEnd(log, records(1_200), records(null))).toEqual({ closed: true });
  });

  test("its FIN alone, before the prover's end: closed", () => {
    expect(connectionEnd([prover(300, 0), target(1_200, 1), fin(2), proverEnd(3)], records(null), records(null))).toEqual({ closed: true });
  });

  test("neither close_notify nor FIN: not closed, and why", () => {
    const log = [prover(300, 0), target(1_200, 1), proverEnd(2)];
    expect(connectionEnd(log, records(null), records(null))).toEqual({ closed: false, why: "the server neither sent close_notify nor closed the connection" });
    // A close_notify offset the log never carried (past every target chunk) is no close either.
    expect(connectionEnd(log, records(1_200), records(null))).toEqual({ closed: false, why: "the server neither sent close_notify nor closed the connection" });
  });

  test("a close after the prover's end is the prover's doing; the earlier of close_notify and FIN decides", () => {
    const after = { closed: false, why: "the server closed only after the prover had closed its side" };
    expect(connectionEnd([prover(300, 0), target(1_000, 1), proverEnd(2), target(1_100, 3), fin(4)], records(1_050), records(null))).toEqual(after);
    // The FIN came first, before the prover's end: closed, though the close_notify's chunk came after it.
    expect(connectionEnd([prover(300, 0), target(1_000, 1), fin(2), proverEnd(3), target(1_100, 4)], records(1_050), records(null))).toEqual({ closed: true });
    // The close_notify came first, before the prover's end: closed, though the FIN came after it.
    expect(connectionEnd([prover(300, 0), target(1_100, 1), proverEnd(2), fin(3)], records(1_050), records(null))).toEqual({ closed: true });
  });

  test("the client's alert before the server's close is a close it asked for; after it, it changes nothing", () => {
    const asked = { closed: false, why: "the client sent an alert before the server closed" };
    // The client's alert at its offset 350 went in its second chunk (bytes 300..400), before the server's FIN.
    const log = [prover(300, 0), target(1_000, 1), prover(400, 2), fin(3), proverEnd(4)];
    expect(connectionEnd(log, records(null), records(350))).toEqual(asked);
    expect(connectionEnd(log, records(null), records(300))).toEqual(asked);
    // In its first chunk: before.
    expect(connectionEnd(log, records(null), records(0))).toEqual(asked);
    // Sent after the server's FIN: the server had closed of its own accord.
    expect(connectionEnd([prover(300, 0), target(1_000, 1), fin(2), prover(400, 3), proverEnd(4)], records(null), records(350))).toEqual({ closed: true });
    // An alert offset no prover chunk carried is no alert seen.
    expect(connectionEnd(log, records(null), records(400))).toEqual({ closed: true });
  });

  test("without the client's records nothing shows that it did not ask for the close", () => {
    expect(connectionEnd([prover(300, 0), target(1_000, 1), fin(2)], records(null), null)).toEqual({
      closed: false,
      why: "the client's records are not all readable (TLS 1.3 with the request or a value of it hidden), so nothing shows that the client did not ask the server to close",
    });
  });
});
