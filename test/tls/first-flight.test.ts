import { beforeAll, describe, expect, test } from "bun:test";
import { MAX_FIRST_FLIGHT_BYTES, MAX_FIRST_FLIGHT_RECORDS, judgeFirstFlight, openingGate } from "../../src/tls/first-flight.ts";
import { parseClientHello } from "../../src/tls/handshake.ts";
import { clientHelloFor } from "../../testkit/client-hello.ts";

/**
 * The relay's first-flight rule on real ClientHellos (node:tls, the prover's own client): a whole ClientHello
 * naming the session's server passes, in however many pieces it comes; anything else is refused, as early as
 * its first wrong byte.
 */
const NAME = "api.target.example";
let hello: Uint8Array;
let otherHello: Uint8Array;
let namelessHello: Uint8Array;

beforeAll(async () => {
  [hello, otherHello, namelessHello] = await Promise.all([clientHelloFor(NAME), clientHelloFor("evil.example"), clientHelloFor()]);
});

const record = (type: number, fragment: Uint8Array) => Uint8Array.from([type, 3, 1, fragment.length >> 8, fragment.length & 0xff, ...fragment]);
/** The same ClientHello message carried by handshake records of at most `size` bytes instead of one. */
function inRecordsOf(size: number, flight: Uint8Array): Uint8Array {
  const message = flight.subarray(5);
  const out: number[] = [];
  for (let at = 0; at < message.length; at += size) out.push(...record(22, message.subarray(at, at + size)));
  return Uint8Array.from(out);
}
const inTwoRecords = (flight: Uint8Array) => inRecordsOf(Math.ceil((flight.length - 5) / 2), flight);
const refusalOf = (bytes: Uint8Array, name = NAME) => {
  const verdict = judgeFirstFlight(bytes, name);
  return verdict.kind === "refused" ? verdict.reason : verdict.kind;
};

describe("the first flight a relay passes on", () => {
  test("a whole ClientHello for the session's server, its name compared case-blind", async () => {
    expect(judgeFirstFlight(hello, NAME)).toEqual({ kind: "accepted" });
    expect(judgeFirstFlight(hello, "API.Target.Example")).toEqual({ kind: "accepted" });
    expect(judgeFirstFlight(await clientHelloFor("API.Target.Example"), NAME)).toEqual({ kind: "accepted" });
    expect(judgeFirstFlight(inTwoRecords(hello), NAME)).toEqual({ kind: "accepted" });
  });

  test("a ClientHello not yet whole is waited for, at any cut", () => {
    for (const cut of [0, 1, 5, 6, 200, hello.length - 1]) expect(judgeFirstFlight(hello.subarray(0, cut), NAME).kind).toBe("incomplete");
    // What must come before another look: the rest of the record, or of the next record's header.
    expect(judgeFirstFlight(hello.subarray(0, 200), NAME)).toEqual({ kind: "incomplete", needed: hello.length });
    const two = inTwoRecords(hello);
    const firstEnd = 5 + Math.ceil((hello.length - 5) / 2);
    expect(judgeFirstFlight(two.subarray(0, firstEnd + 2), NAME)).toEqual({ kind: "incomplete", needed: firstEnd + 5 });
    // With four bytes of the second header the length is not whole yet; with all five it is.
    expect(judgeFirstFlight(two.subarray(0, firstEnd + 4), NAME)).toEqual({ kind: "incomplete", needed: firstEnd + 5 });
    expect(judgeFirstFlight(two.subarray(0, firstEnd + 5), NAME)).toEqual({ kind: "incomplete", needed: two.length });
  });

  test("the gate keeps its own copy of each piece, and says only that more is needed", () => {
    const gate = openingGate(NAME);
    const piece = hello.slice(0, 10);
    expect(gate.push(piece)).toStrictEqual({ kind: "incomplete" });
    piece.fill(0);
    const last = gate.push(hello.subarray(10));
    expect(last.kind === "accepted" && Buffer.from(last.bytes).equals(Buffer.from(hello))).toBe(true);
  });

  test("the gate holds every piece back and hands over exactly the bytes sent, once the ClientHello is whole", () => {
    for (const flight of [hello, inTwoRecords(hello)]) {
      const gate = openingGate(NAME);
      const steps = [...flight].map((byte) => gate.push(Uint8Array.of(byte)));
      expect(steps.slice(0, -1).every((step) => step.kind === "incomplete")).toBe(true);
      const last = steps.at(-1)!;
      expect(last.kind === "accepted" && Buffer.from(last.bytes).equals(Buffer.from(flight))).toBe(true);
    }
    const refusing = openingGate(NAME);
    expect(refusing.push(otherHello.subarray(0, 3)).kind).toBe("incomplete");
    expect(refusing.push(otherHello.subarray(3))).toEqual({ kind: "refused", reason: `the ClientHello names another server than ${NAME}` });
  });

  test.each([
    ["plain HTTP", () => new TextEncoder().encode("GET / HTTP/1.1\r\nHost: api.target.example\r\n\r\n"), "the client's first bytes are not a TLS handshake record"],
    ["a ClientHello for another server", () => otherHello, `the ClientHello names another server than ${NAME}`],
    ["a ClientHello without a server name", () => namelessHello, `the ClientHello names no server (no SNI), not ${NAME}`],
    ["a ServerHello-typed message", () => Uint8Array.from([...hello.subarray(0, 5), 2, ...hello.subarray(6)]), "the client's first handshake message is not a ClientHello"],
    ["an alert first", () => record(21, Uint8Array.of(2, 40)), "the client's first bytes are not a TLS handshake record"],
    ["application data inside the ClientHello", () => Uint8Array.from([...inRecordsOf(100, hello).subarray(0, 105), ...record(23, Uint8Array.of(1, 2, 3))]), "the client's ClientHello is interrupted by a record of another type"],
    ["a bad record version", () => Uint8Array.from([22, 9, 1, 0, 4, 1, 0, 0, 0]), "the client bytes are not TLS records (bad record header at byte 0)"],
    ["a whole but malformed ClientHello", () => record(22, Uint8Array.of(1, 0, 0, 3, 3, 3, 0)), "ClientHello is truncated"],
  ])("%s is refused", (_name, bytes, reason) => {
    expect(refusalOf(bytes())).toBe(reason);
  });

  test(`a ClientHello spread over ${MAX_FIRST_FLIGHT_RECORDS} records or more is refused before it ends`, () => {
    expect(judgeFirstFlight(inRecordsOf(400, hello), NAME)).toEqual({ kind: "accepted" });
    const tiny = inRecordsOf(1, hello);
    expect(refusalOf(tiny.subarray(0, 6 * MAX_FIRST_FLIGHT_RECORDS))).toBe("incomplete");
    expect(refusalOf(tiny.subarray(0, 6 * MAX_FIRST_FLIGHT_RECORDS + 6))).not.toBe("incomplete");
    expect(refusalOf(tiny)).toBe(`the client's ClientHello is spread over more than ${MAX_FIRST_FLIGHT_RECORDS} records`);
  });

  test("a ClientHello that never ends is refused once the relay has held its limit of bytes", () => {
    // A handshake message announcing 16 MB, carried by full records.
    const head = Uint8Array.of(1, 0xff, 0xff, 0xff);
    const flight: number[] = [...record(22, Uint8Array.from([...head, ...new Uint8Array(16380)]))];
    while (flight.length < MAX_FIRST_FLIGHT_BYTES) flight.push(...record(22, new Uint8Array(16384)));
    expect(flight.length).toBeGreaterThan(MAX_FIRST_FLIGHT_BYTES);
    expect(refusalOf(Uint8Array.from(flight).subarray(0, MAX_FIRST_FLIGHT_BYTES - 1))).toBe("incomplete");
    expect(refusalOf(Uint8Array.from(flight).subarray(0, MAX_FIRST_FLIGHT_BYTES))).toBe(`the client's first ${MAX_FIRST_FLIGHT_BYTES} bytes hold no whole ClientHello`);
    expect(refusalOf(Uint8Array.from(flight))).toBe(`the client's first ${MAX_FIRST_FLIGHT_BYTES} bytes hold no whole ClientHello`);
  });
});

test("a ClientHello naming the server with a trailing dot is refused, whatever the session's name: SNI never carries one (RFC 6066)", async () => {
  const dotted = await clientHelloFor("API.Target.Example.");
  expect(parseClientHello(dotted.subarray(9)).serverName).toBe("API.Target.Example.");
  const reason = `the ClientHello's SNI ends in a dot (RFC 6066 sends none); expected ${NAME}`;
  expect(judgeFirstFlight(dotted, NAME)).toEqual({ kind: "refused", reason });
  expect(judgeFirstFlight(dotted, `${NAME}.`)).toEqual({ kind: "refused", reason: `${reason}.` });
  expect(openingGate(NAME).push(dotted)).toEqual({ kind: "refused", reason });
});
