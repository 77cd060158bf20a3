import { afterAll, expect, test } from "bun:test";
import { countEngineSockets, engineSocketStats, socketStatsText } from "../../src/engine/socket-stats.ts";
import { eventually } from "../../testkit/wait.ts";

/** An echo server standing in for a notary's MPC socket. */
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (request, server) => (server.upgrade(request) ? undefined : new Response("websocket expected", { status: 400 })),
  websocket: { message: (ws, message) => void ws.send(message) },
});
afterAll(() => server.stop(true));

/**
 * The bytes the engine handed each of its sockets and those it was delivered, counted by the global WebSocket
 * this process's engine dials with; found by the session id in the URL, with the single-use token left out.
 */
test("a socket's bytes each way, found by its session id, until it closes", async () => {
  countEngineSockets();
  countEngineSockets(); // once per process: a second call changes nothing
  const socket = new WebSocket(`ws://127.0.0.1:${server.port}/notarize?sessionId=s-1&token=secret-token`);
  socket.binaryType = "arraybuffer";
  await new Promise((resolve) => socket.addEventListener("open", resolve, { once: true }));
  const echoed = new Promise((resolve) => socket.addEventListener("message", resolve, { once: true }));
  socket.send(new Uint8Array(300));
  await echoed;
  const [stats, ...others] = engineSocketStats("s-1");
  expect(others).toEqual([]);
  expect(stats).toEqual({ target: "/notarize?sessionId=s-1", readyState: 1, sentBytes: 300, receivedBytes: 300, bufferedBytes: 0 });
  expect(socketStatsText([stats!])).toBe("the engine handed its MPC socket 300 bytes (0 not yet written) and was delivered 300");
  expect(engineSocketStats("s-2")).toEqual([]);
  socket.close();
  expect(await eventually(() => engineSocketStats("s-1"), (list) => list.length === 0, 5_000)).toEqual([]);
  expect(socketStatsText([])).toBe("the engine's MPC socket is closed");
});
