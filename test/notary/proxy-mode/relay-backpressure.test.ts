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

/** A target that answers any first bytes with `answer`, writing no faster than its connection takes it. */
interface StreamingTarget {
  server: Server;
  port: number;
  /** Bytes handed to the connection so far. */
  written(): number;
  /** Whether it waits for its connection to drain. */
  blocked(): boolean;
}

async function startStreamingTarget(): Promise<StreamingTarget> {
  let written = 0;
  let blocked = false;
  const server = createServer((socket: Socket) => {
    socket.on("error", () => {});
    socket.once("data", async () => {
      while (written < ANSWER_BYTES) {
        const chunk = answer.subarray(written, written + 64 * 1024);
        written += chunk.length;
        if (socket.write(chunk)) continue;
        blocked = true;
        await new Promise((resolve) => socket.once("drain", resolve));
        blocked = false;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port, written: () => written, blocked: () => blocked };
}

let target: StreamingTarget;
let notary: NotaryServer;

beforeAll(async () => {
  target = await startStreamingTarget();
  notary = startProxyNotary({ ports: [target.port], concurrency: 1, proxy: { maxRecvData: 2 * ANSWER_BYTES, maxPendingConnects: 1 } });
});

afterAll(async () => {
  await notary?.stop(0);
  target?.server.close();
});

test("a prover that stops reading: the relay stops reading the target; once it reads again, every byte arrives in order", async () => {
  const sessionId = await createProxySession(notary, TARGET_HOST, target.port);
  const relay = await openUnreadWebSocket(`${notary.url.replace(/^http/, "ws")}/relay?sessionId=${sessionId}`);
  relay.stopReading();
  relay.send(await clientHelloFor(TARGET_HOST));
  expect(await eventually(() => target.blocked(), (blocked) => blocked, 10_000, { intervalMs: 10 })).toBe(true);
  // A relay that kept reading would take the rest in well under this; one that paused never does while unread.
  await Bun.sleep(300);
  expect(target.blocked()).toBe(true);
  expect(target.written()).toBeLessThan(ANSWER_BYTES);
  relay.resumeReading();
  // The socket drains, and the relay goes on reading the target, each time it backs up again.
  expect(await eventually(() => relay.receivedLength(), (length) => length >= ANSWER_BYTES, 10_000, { intervalMs: 20 })).toBe(ANSWER_BYTES);
  expect(Buffer.from(relay.received()).equals(answer)).toBe(true);
  relay.close();
});
