/**
 * Proxy mode's relay over real TCP: what it records and logs, its byte limits each way, and a target that refuses
 * or never accepts the notary's connection. The relay does not read TLS, so a plain TCP target whose bytes the test
 * writes shows exactly what passed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Server, type Socket, createServer } from "node:net";
import { AppError } from "../../../src/core/errors.ts";
import { type Relay, type RelayLimits, openRelay } from "../../../src/notary/proxy-mode/relay.ts";
import { startUnacceptingListener } from "../../../testkit/unaccepting-listener.ts";
import { eventually } from "../../../testkit/wait.ts";

// Each test takes well under a second: one that waits for an end that never comes fails in seconds, not minutes.
setDefaultTimeout(3_000);

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (value: string) => new TextEncoder().encode(value);

/** A target that answers each chunk it reads with a line the test chooses, and ends after `last`. */
let target: Server;
let port: number;
/** `count` TLS application-data records of one byte each, back to back. */
function tinyRecords(count: number): Uint8Array {
  return Uint8Array.from({ length: count * 6 }, (_, i) => [23, 3, 3, 0, 1, 0x61][i % 6]!);
}

/** Called once the target handed "second" to the kernel: from then on the relay's socket can read it. */
let secondWritten: () => void = () => {};
const answers = new Map<string, (socket: Socket) => void>([
  ["hello", (socket) => socket.end("world!")],
  ["two", (socket) => socket.write("first")],
  ["more", (socket) => socket.write("second", () => secondWritten())],
  ["reset", (socket) => socket.resetAndDestroy()],
  ["records", (socket) => socket.write(tinyRecords(3))],
]);

beforeAll(async () => {
  target = createServer((socket) => {
    socket.on("error", () => {});
    socket.on("data", (chunk) => answers.get(chunk.toString())?.(socket));
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  port = (target.address() as { port: number }).port;
});

afterAll(() => {
  target?.close();
});

const ROOMY: RelayLimits = { maxToTarget: 1_000, maxFromTarget: 1_000 };

/** A relay attached to a peer that records what it is sent and whether it was closed; `accept` answers `send`. */
async function relayTo(limits: RelayLimits = ROOMY, accept = () => true) {
  const relay = await openRelay("127.0.0.1", port, 2_000, limits);
  const got: string[] = [];
  let peerClosed = false;
  let markClosed!: () => void;
  const closing = new Promise<void>((resolve) => (markClosed = resolve));
  let arrived!: () => void;
  let next = new Promise<void>((resolve) => (arrived = resolve));
  relay.attach({
    send(data) {
      got.push(text(data));
      arrived();
      next = new Promise<void>((resolve) => (arrived = resolve));
      return accept();
    },
    close() {
      peerClosed = true;
      markClosed();
    },
  });
  return { relay, got, peerClosed: () => peerClosed, closing, nextChunk: () => next };
}

const kinds = (relay: Relay) => relay.events().map((event) => ("through" in event ? `${event.kind}:${event.through}` : event.kind));

describe("the relay", () => {
  test("records both directions as they passed, logs them in order with the target's FIN and the prover's end", async () => {
    const before = Date.now();
    const { relay, got, closing } = await relayTo();
    relay.toTarget(bytes("hello"));
    // The target answers and ends its side: the relay's socket closes, and with it the peer.
    await closing;
    expect(got.join("")).toBe("world!");
    relay.proverClosed();
    await relay.ended;
    expect(text(relay.recorded().clientToServer)).toBe("hello");
    expect(text(relay.recorded().serverToClient)).toBe("world!");
    expect(kinds(relay)).toEqual(["prover-bytes:5", "target-bytes:6", "target-fin", "prover-end"]);
    const times = relay.events().map((event) => event.at);
    expect(times.every((at, i) => at >= before && at <= Date.now() && (i === 0 || at >= times[i - 1]!))).toBe(true);
    expect(relay.failure()).toBeUndefined();
  });

  test("the relay records its own copy of the prover's bytes: a buffer reused by the caller changes nothing", async () => {
    const { relay } = await relayTo();
    const buffer = bytes("abc");
    relay.toTarget(buffer);
    buffer.fill(0x7a);
    expect(text(relay.recorded().clientToServer)).toBe("abc");
    relay.close();
  });

  test("a relay's log is its own copy: what a caller does with it changes nothing", async () => {
    const { relay, nextChunk } = await relayTo();
    const first = nextChunk();
    relay.toTarget(bytes("two"));
    await first;
    relay.events().pop();
    expect(kinds(relay)).toEqual(["prover-bytes:3", "target-bytes:5"]);
    relay.close();
  });

  test("the prover may send its limit, not a byte more: the relay then fails and closes its peer", async () => {
    const { relay, peerClosed } = await relayTo({ maxToTarget: 8, maxFromTarget: 1_000 });
    relay.toTarget(bytes("abc"));
    relay.toTarget(bytes("defgh"));
    expect(relay.failure()).toBeUndefined();
    relay.toTarget(bytes("i"));
    expect(relay.failure()).toBe("the prover sent more than this notary relays (8 bytes)");
    expect(peerClosed()).toBe(true);
    await relay.ended;
    expect(kinds(relay)).toEqual(["prover-bytes:3", "prover-bytes:8"]);
  });

  test("each direction carries at most maxRecords TLS records: one-byte records cannot make a relay cost the notary seconds", async () => {
    const prover = await relayTo({ ...ROOMY, maxRecords: 3 });
    prover.relay.toTarget(tinyRecords(3));
    expect(prover.relay.failure()).toBeUndefined();
    // A record's header split over two messages is one record.
    prover.relay.toTarget(Uint8Array.of(23, 3));
    prover.relay.toTarget(Uint8Array.of(3, 0, 1, 0x61));
    expect(prover.relay.failure()).toBe("the prover sent more than 3 TLS records, which this notary relays at most");
    await prover.relay.ended;
    expect(prover.peerClosed()).toBe(true);

    // As many records as the bound are relayed.
    const enough = await relayTo({ ...ROOMY, maxRecords: 3 });
    enough.relay.toTarget(bytes("records"));
    // All 18 bytes reach the peer, in however many chunks the socket gives them.
    expect(await eventually(() => enough.got.join("").length, (length) => length >= 18, 5_000, { intervalMs: 5 })).toBe(18);
    expect(enough.relay.failure()).toBeUndefined();
    enough.relay.close();

    const target = await relayTo({ ...ROOMY, maxRecords: 2 });
    target.relay.toTarget(bytes("records"));
    await target.relay.ended;
    expect(target.relay.failure()).toBe("the target sent more than 2 TLS records, which this notary relays at most");
    // Nothing of the chunk over the bound is passed on.
    expect(target.got).toEqual([]);
  });

  test("the target may send its limit, not a byte more: the bytes over it are not passed on", async () => {
    const exact = await relayTo({ maxToTarget: 1_000, maxFromTarget: 5 });
    const chunk = exact.nextChunk();
    exact.relay.toTarget(bytes("two"));
    await chunk;
    expect(exact.relay.failure()).toBeUndefined();
    exact.relay.toTarget(bytes("more"));
    await exact.relay.ended;
    expect(exact.relay.failure()).toBe("the target sent more than this notary relays (5 bytes)");
    expect(exact.got).toEqual(["first"]);
    // The chunk over the limit is logged as it came (the socket's end may follow as it is destroyed).
    expect(kinds(exact.relay).slice(0, 4)).toEqual(["prover-bytes:3", "target-bytes:5", "prover-bytes:7", "target-bytes:11"]);
    expect(exact.peerClosed()).toBe(true);
  });

  test("a peer that is backed up stops the reading of the target until it drains", async () => {
    const { relay, got, nextChunk } = await relayTo(ROOMY, () => false);
    const first = nextChunk();
    relay.toTarget(bytes("two"));
    await first;
    const written = new Promise<void>((resolve) => (secondWritten = resolve));
    relay.toTarget(bytes("more"));
    await written;
    // The answer is readable on loopback now; two turns of the event loop hold a poll phase, where a relay that
    // read its socket would take it. This one does not: it waits in the socket while the peer is backed up.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(got).toEqual(["first"]);
    const second = nextChunk();
    relay.resume();
    await second;
    expect(got).toEqual(["first", "second"]);
    relay.close();
  });

  test("a connection the target breaks (reset) ends the relay and is logged, not a failure: the records and the answer rule judge what came", async () => {
    const { relay, peerClosed } = await relayTo();
    relay.toTarget(bytes("reset"));
    await relay.ended;
    expect(relay.failure()).toBeUndefined();
    expect(relay.events().map((event) => event.kind)).toEqual(["prover-bytes", "target-reset"]);
    expect(peerClosed()).toBe(true);
  });

  test("close ends the relay and tells its peer", async () => {
    const { relay, peerClosed } = await relayTo();
    relay.close();
    await relay.ended;
    expect(peerClosed()).toBe(true);
    expect(relay.failure()).toBeUndefined();
  });
});

describe("connecting to the target", () => {
  test("a port nobody listens on is target_unreachable, naming the port", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const freePort = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = openRelay("127.0.0.1", freePort, 2_000, ROOMY);
    await expect(refused).rejects.toBeInstanceOf(AppError);
    await expect(refused).rejects.toMatchObject({ code: "target_unreachable", message: `the notary could not connect to the target on port ${freePort}` });
  });

  test("a target that never accepts is target_timeout once the connect timeout passed, not before", async () => {
    const listener = await startUnacceptingListener();
    try {
      const started = performance.now();
      const refused = openRelay("127.0.0.1", listener.port, 100, ROOMY);
      await expect(refused).rejects.toMatchObject({ code: "target_timeout", message: "the target did not accept the notary's connection within 100 ms" });
      expect(performance.now() - started).toBeGreaterThanOrEqual(95);
    } finally {
      listener.close();
    }
  });
});
