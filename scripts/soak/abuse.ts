/**
 * Bounded abuse of a running prover and notary: each kind keeps a fixed number of clients (or a fixed rate) busy
 * until `stop` fires, and counts how the servers answered. Loopback only.
 */
import { readFileSync } from "node:fs";
import { type Socket, connect } from "node:net";
import { SOAK_LIMITS, type SoakServers } from "./servers.ts";

export interface AbuseCounts {
  subscribersOpened: number;
  subscribersRefused503: number;
  /** Most subscriptions held open at once (the prover answered 200 and had not ended them). */
  subscribersHeldPeak: number;
  slowBodiesClosedByServer: number;
  sessionsUnauthenticated401: number;
  sessionsUnauthenticatedOther: number;
  sessionsCreated: number;
  sessionsRefused503: number;
  storeStreamsOpened: number;
  storeStreamsRefused503: number;
  /** Stalled store streams the prover ended before their last event (its idle limit). */
  storeStreamsDroppedIdle: number;
}

export const emptyCounts = (): AbuseCounts => ({
  subscribersOpened: 0, subscribersRefused503: 0, subscribersHeldPeak: 0, slowBodiesClosedByServer: 0,
  sessionsUnauthenticated401: 0, sessionsUnauthenticatedOther: 0, sessionsCreated: 0, sessionsRefused503: 0,
  storeStreamsOpened: 0, storeStreamsRefused503: 0, storeStreamsDroppedIdle: 0,
});

/** Subscribers tried beyond the free places each round: these must be refused. */
const EXTRA_SUBSCRIBERS = 4;
export const SLOW_BODY_CLIENTS = 16;
const STORE_READERS = SOAK_LIMITS.storeStreams + 4;
export const STORE_STREAM = "soak";
const STORE_MESSAGE_BYTES = 10_000;

/**
 * The most one loopback connection can hold in flight: the receiver's autotuned window and the sender's buffer, at
 * their maxima (Linux). A reader that stops reading holds its stream's place only while the stream is larger.
 */
function socketBuffersBytes(): number {
  const most = (path: string) => Number(readFileSync(path, "utf8").trim().split(/\s+/).at(-1));
  return most("/proc/sys/net/ipv4/tcp_rmem") + most("/proc/sys/net/ipv4/tcp_wmem");
}

/** Twice what the buffers hold (machines differ: 30 MB was once enough, and a 32 MB receive window is not rare). */
const STORE_MESSAGES = Math.max(3000, Math.ceil((2 * socketBuffersBytes()) / STORE_MESSAGE_BYTES / 100) * 100);

/** Sleeps `ms` or until `stop` fires. */
const pause = (ms: number, stop: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    stop.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });

/** A raw HTTP/1.1 connection: what a client that writes or reads slowly looks like from the server. */
function rawConnection(base: string, head: string): Promise<{ socket: Socket; firstBytes: Promise<string>; closed: Promise<void> }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(head);
      const firstBytes = new Promise<string>((done) => socket.once("data", (chunk) => done(chunk.toString("latin1"))));
      const closed = new Promise<void>((done) => socket.once("close", () => done()));
      resolve({ socket, firstBytes, closed });
    });
    socket.once("error", reject);
  });
}

/** Idle proof subscribers to ids no /proxy call uses, topped up to the cap each round, plus a few beyond it. */
async function idleSubscribers(servers: SoakServers, counts: AbuseCounts, stop: AbortSignal): Promise<void> {
  const held = new Set<AbortController>();
  const ids = Array.from({ length: Math.ceil(SOAK_LIMITS.sseTotal / 8) + 1 }, () => crypto.randomUUID());
  const open = async (id: string) => {
    const abort = new AbortController();
    stop.addEventListener("abort", () => abort.abort(), { once: true });
    try {
      const response = await fetch(`${servers.prover.url}/proof/${id}`, { signal: abort.signal });
      if (response.status === 503) return void counts.subscribersRefused503++;
      if (response.status !== 200) throw new Error(`subscriber answered ${response.status}`);
      counts.subscribersOpened++;
      held.add(abort);
      counts.subscribersHeldPeak = Math.max(counts.subscribersHeldPeak, held.size);
      // Never reads past what arrives: the stream ends by itself (unknown_request) or when the soak stops.
      await response.body?.pipeTo(new WritableStream()).catch(() => {});
    } catch (error) {
      if (!stop.aborted) throw error;
    } finally {
      held.delete(abort);
    }
  };
  const running: Promise<void>[] = [];
  for (let round = 0; !stop.aborted; round++) {
    const wanted = SOAK_LIMITS.sseTotal - held.size + EXTRA_SUBSCRIBERS;
    const opening = Array.from({ length: wanted }, (_, i) => open(ids[(round + i) % ids.length]!));
    running.push(...opening);
    await pause(5_000, stop);
  }
  await Promise.all(running);
}

/** /proxy calls whose body arrives one byte at a time, slower than PROVER_IDLE_TIMEOUT: the prover must drop them. */
async function slowBodies(servers: SoakServers, counts: AbuseCounts, stop: AbortSignal): Promise<void> {
  const gapMs = (SOAK_LIMITS.idleTimeoutS + 3) * 1000;
  const client = async () => {
    while (!stop.aborted) {
      const head =
        `POST /proxy HTTP/1.1\r\nHost: 127.0.0.1\r\nT-PROXY-URL: https://localhost/echo\r\n` +
        `T-REQUEST-ID: ${crypto.randomUUID()}\r\nContent-Length: 100000\r\n\r\n`;
      const { socket, closed } = await rawConnection(servers.prover.url, head);
      let closedByServer = false;
      void closed.then(() => (closedByServer = !stop.aborted));
      while (!closedByServer && !stop.aborted) {
        await Promise.race([pause(gapMs, stop), closed]);
        if (!socket.destroyed) socket.write("x");
      }
      socket.destroy();
      if (closedByServer) counts.slowBodiesClosedByServer++;
    }
  };
  await Promise.all(Array.from({ length: SLOW_BODY_CLIENTS }, client));
}

/** POST /session on the notary, 4 a second without a key (401) and 4 with one: sessions nobody connects to. */
async function sessionFlood(servers: SoakServers, counts: AbuseCounts, stop: AbortSignal): Promise<void> {
  const body = JSON.stringify({ maxSentData: 1024, maxRecvData: 2048 });
  const post = (headers: Record<string, string>) =>
    fetch(`${servers.notary.url}/session`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
  while (!stop.aborted) {
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => post({})),
      ...Array.from({ length: 4 }, () => post({ authorization: servers.notaryKey })),
    ]);
    answers.forEach((answer, i) => {
      if (i < 4) answer.status === 401 ? counts.sessionsUnauthenticated401++ : counts.sessionsUnauthenticatedOther++;
      else if (answer.status === 200) counts.sessionsCreated++;
      else if (answer.status === 503) counts.sessionsRefused503++;
      else throw new Error(`POST /session with a key answered ${answer.status}`);
    });
    await Promise.all(answers.map((answer) => answer.body?.cancel()));
    await pause(1_000, stop);
  }
}

/** Fills a non-proof stream with STORE_MESSAGES messages of 10 kB: more than a connection's socket buffers hold. */
export async function fillStoreStream(servers: SoakServers): Promise<void> {
  const pad = "x".repeat(STORE_MESSAGE_BYTES);
  for (let sent = 0; sent < STORE_MESSAGES; sent += 100) {
    const entries = Array.from({ length: 100 }, (_, i) => ({ content: { i: sent + i, pad } }));
    const response = await fetch(`${servers.prover.url}/stores/${STORE_STREAM}/data/partitions/0`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(entries),
    });
    if (response.status !== 200) throw new Error(`publish answered ${response.status}: ${await response.text()}`);
  }
}

/**
 * Readers of the whole stream over SSE, more than the cap, each opening again at once when its stream ends: half
 * read a little every 2 s; half stall (read nothing) past the prover's idle limit, then read what is left to see
 * whether the prover dropped them. A stalled stream holds its place only until that limit (the receive buffers of
 * loopback may be large, so the stall is what keeps a place, not the size of the stream), which is why the stalled
 * readers come back at once: readers beyond the cap stay waiting all through the run, not only at its start.
 */
async function storeStreams(servers: SoakServers, counts: AbuseCounts, stop: AbortSignal): Promise<void> {
  const stallMs = (SOAK_LIMITS.idleTimeoutS + 3) * 1000;
  const reader = async (slow: boolean) => {
    while (!stop.aborted) {
      const head = `GET /stores/${STORE_STREAM}/data/partitions/0/from?fromTimestamp=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`;
      const { socket, firstBytes, closed } = await rawConnection(servers.prover.url, head);
      const status = (await Promise.race([firstBytes, closed.then(() => "")])).slice(9, 12);
      if (status === "503") {
        counts.storeStreamsRefused503++;
        socket.destroy();
        await pause(250, stop);
        continue;
      }
      if (status !== "200") {
        socket.destroy();
        if (stop.aborted) break;
        throw new Error(`store stream answered ${JSON.stringify(status)}`);
      }
      counts.storeStreamsOpened++;
      socket.pause();
      let ended = false;
      void closed.then(() => (ended = true));
      if (slow) {
        while (!ended && !stop.aborted) {
          socket.resume();
          await pause(50, stop);
          socket.pause();
          await Promise.race([pause(2_000, stop), closed]);
        }
      } else {
        await pause(stallMs, stop);
        if (!stop.aborted && (await endsUnfinished(socket, closed))) counts.storeStreamsDroppedIdle++;
      }
      socket.destroy();
    }
  };
  await Promise.all(Array.from({ length: STORE_READERS }, (_, i) => reader(i % 2 === 1)));
}

/** Reads a stalled stream's rest: true when it ends without its final metadata event (the server dropped it). */
async function endsUnfinished(socket: Socket, closed: Promise<void>): Promise<boolean> {
  let tail = "";
  socket.on("data", (chunk: Buffer) => (tail = (tail + chunk.toString("latin1")).slice(-4096)));
  socket.resume();
  const ended = await Promise.race([closed.then(() => true), Bun.sleep(10_000).then(() => false)]);
  return ended && !tail.includes("event: metadata");
}

/** Runs every kind of abuse until `stop` fires; resolves once every client has let go. */
export async function runAbuse(servers: SoakServers, counts: AbuseCounts, stop: AbortSignal): Promise<void> {
  await Promise.all([
    idleSubscribers(servers, counts, stop),
    slowBodies(servers, counts, stop),
    sessionFlood(servers, counts, stop),
    storeStreams(servers, counts, stop),
  ]);
}
