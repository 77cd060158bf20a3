/**
 * A relay whose prover does not read, over the notary's real routes in this process: the prover's socket backs up
 * for real (a client that stops reading its TCP connection), the relay stops reading the target, and it reads on once
 * the socket drains, every byte passed on in order.
 */
import { randomBytes } from "node:crypto";
import { type Server, type Socket, createServer } from "node:net";
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { NotaryServer } from "../../../src/app/notary.ts";
import { clientHelloFor } from "../../../testkit/client-hello.ts";
import { createProxySession } from "../../../testkit/raw-relay.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { openUnreadWebSocket } from "../../../testkit/unread-websocket.ts";
import { eventually } from "../../../testkit/wait.ts";
import { startProxyNotary } from "./support/proxy-notary.ts";

setDefaultTimeout(30_000);

/**
 * What the target sends: more than the loopback connections' kernel buffers hold on both sides of the notary (about
 * 8.5 MiB here), and less than a relay that never paused would take in (those buffers and the socket's own 16 MiB).
 */
const ANSWER_BYTES = 16 * 1024 * 1024;
const answer = randomBytes(ANSWER_BYTES);

/** One connection of the target: what it has handed to the connection so far, and whether it waits for a drain. */
interface TargetConnection {
  written: number;
  blocked: boolean;
}

/** A target that answers any first bytes with `answer`, writing no faster than each connection takes it. */
interface StreamingTarget {
  server: Server;
  port: number;
  /** Its connections, in the order they came. */
  connections: TargetConnection[];
}

async function startStreamingTarget(): Promise<StreamingTarget> {
  const connections: TargetConnection[] = [];
  const server = createServer((socket: Socket) => {
    const connection: TargetConnection = { written: 0, blocked: false };
    connections.push(connection);
    socket.on("error", () => {});
    socket.once("data", async () => {
      while (connection.written < ANSWER_BYTES) {
        const chunk = answer.subarray(connection.written, connection.written + 64 * 1024);
        connection.written += chunk.length;
        if (socket.write(chunk)) continue;
        connection.blocked = true;
        await new Promise((resolve) => socket.once("drain", resolve));
        connection.blocked = false;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port, connections };
}

let target: StreamingTarget;
let notary: NotaryServer;

beforeAll(async () => {
  target = await startStreamingTarget();
  notary = startProxyNotary({ ports: [target.port], concurrency: 2, proxy: { maxRecvData: 2 * ANSWER_BYTES, maxPendingConnects: 2 } });
});

afterAll(async () => {
  await notary?.stop(0);
  target?.server.close();
});

/** A relay of a new session to the target, its ClientHello sent, and the target's connection that it opened. */
async function relayToTarget(read: boolean) {
  const before = target.connections.length;
  const sessionId = await createProxySession(notary, TARGET_HOST, target.port);
  const relay = await openUnreadWebSocket(`${notary.url.replace(/^http/, "ws")}/relay?sessionId=${sessionId}`);
  if (!read) relay.stopReading();
  relay.send(await clientHelloFor(TARGET_HOST));
  await eventually(() => target.connections.length, (n) => n > before, 10_000, { intervalMs: 10 });
  return { relay, connection: target.connections[before]! };
}

test("a prover that stops reading: the relay stops reading the target; once it reads again, every byte arrives in order", async () => {
  const unread = await relayToTarget(false);
  expect(await eventually(() => unread.connection.blocked, (blocked) => blocked, 10_000, { intervalMs: 10 })).toBe(true);
  // A control relay whose prover reads carries the whole answer meanwhile: a relay that kept reading the target
  // while its prover did not would have taken the unread answer in by then, as fast as this one took its own.
  const control = await relayToTarget(true);
  expect(await eventually(() => control.relay.receivedLength(), (length) => length >= ANSWER_BYTES, 20_000, { intervalMs: 20 })).toBe(ANSWER_BYTES);
  expect(unread.connection.blocked).toBe(true);
  expect(unread.connection.written).toBeLessThan(ANSWER_BYTES);
  unread.relay.resumeReading();
  // The socket drains, and the relay goes on reading the target, each time it backs up again.
  expect(await eventually(() => unread.relay.receivedLength(), (length) => length >= ANSWER_BYTES, 10_000, { intervalMs: 20 })).toBe(ANSWER_BYTES);
  expect(Buffer.from(unread.relay.received()).equals(answer)).toBe(true);
  expect(Buffer.from(control.relay.received()).equals(answer)).toBe(true);
  unread.relay.close();
  control.relay.close();
});
