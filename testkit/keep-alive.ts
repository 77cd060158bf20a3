/**
 * One request on a raw keep-alive HTTP/1.1 connection, read to the end of its answer (Content-Length or the last
 * chunk); then waits for the server to close the idle connection (at most `waitForCloseMs`). Tells how long the
 * connection idled after its answer before the server closed it (Infinity when it stayed open).
 */
export async function keepAliveExchange(
  base: string,
  path: string,
  { method = "GET", headers = {}, body = "", waitForCloseMs = 15_000 }: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    waitForCloseMs?: number;
  } = {},
): Promise<{ head: string; body: string; msIdleBeforeClose: number }> {
  const { hostname, port } = new URL(base);
  let received = "";
  const split = () => {
    const end = received.indexOf("\r\n\r\n");
    return { head: received.slice(0, end), body: received.slice(end + 4) };
  };
  const complete = () => {
    const answer = split();
    const length = /\r\ncontent-length: (\d+)/i.exec(answer.head)?.[1];
    return length !== undefined ? answer.body.length >= Number(length) : answer.body.endsWith("\r\n0\r\n\r\n");
  };
  let answered!: () => void;
  const answer = new Promise<void>((resolve) => (answered = resolve));
  let closed!: () => void;
  const close = new Promise<void>((resolve) => (closed = resolve));
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data: (_, chunk) => {
        received += chunk.toString("latin1");
        if (received.includes("\r\n\r\n") && complete()) answered();
      },
      close: () => closed(),
      error: () => closed(),
    },
  });
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("");
  const length = method === "GET" ? "" : `content-length: ${Buffer.byteLength(body)}\r\n`;
  socket.write(`${method} ${path} HTTP/1.1\r\nhost: ${hostname}\r\n${lines}${length}\r\n${body}`);
  await Promise.race([answer, close]);
  const answeredAt = Date.now();
  const stillOpen = await Promise.race([close.then(() => false), Bun.sleep(waitForCloseMs).then(() => true)]);
  socket.end();
  return { ...split(), msIdleBeforeClose: stillOpen ? Number.POSITIVE_INFINITY : Date.now() - answeredAt };
}
