import type { Server } from "bun";
import { connect as connectTcp } from "node:net";
import { type Server as TlsServer, createServer } from "node:tls";
import type { ServerIdentity, TlsFixture } from "./tls-fixture.ts";

/**
 * A real HTTPS server on loopback, TLS 1.2 capable, serving the test routes:
 *   /data            JSON with a secret field, and a secret response header
 *   /chunked/...     the same JSON as a chunked body, split inside the secret value
 *   /echo            the request as JSON (method, path, headers, body); a request's x-session-token header
 *                    also comes back as a response header
 *   /refused         401 with a JSON error body repeating the request's secrets as a careless API does: the
 *                    Authorization credential without its scheme, the `sid` cookie's value, the user and
 *                    password of x-service-authorization's Basic credential, the body's `password` percent-encoded
 *   /gzip            the JSON of /data gzip-compressed, with Content-Encoding: gzip, whatever was asked
 *   /status/<code>   that status with a small JSON body
 *   /big?bytes=N     a body of N bytes
 *   /slow?ms=N       the JSON of /data, after N ms
 */
export const SECRET_VALUE = "s3cr3t-response-value";
export const SECRET_HEADER = "x-secret-token";
export const SECRET_HEADER_VALUE = "resp-header-secret-42";

/** When the target began and finished answering a request, by path (the clock is `performance.now()`). */
export type TargetAnswerTimes = (path: string, at: { arrivedMs: number; answeredMs: number }) => void;

/**
 * The test target, presenting `tls`'s leaf (for TARGET_HOST) or another identity from the test CA. `observe`
 * hears of each `/slow` request once answered.
 */
export function startTarget(tls: ServerIdentity, observe?: TargetAnswerTimes): Server<undefined> {
  return Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: TARGET_IDLE_S, tls: { cert: tls.chainPem, key: tls.leafKeyPem }, fetch: targetRoutes(observe) });
}

/**
 * Bun's default idle limit (10 s, swept in ticks of a few seconds) cut a `/slow?ms=9000` answer under load: a test
 * target answers as slowly as its test asks.
 */
const TARGET_IDLE_S = 120;

/** The test routes (above) as a fetch handler. `/counter` answers `{"count":n}`, one more at each request. */
function targetRoutes(observe?: TargetAnswerTimes): (request: Request) => Promise<Response> {
  let count = 0;
  return async (request) => {
    const url = new URL(request.url);
    const json = { user: { id: 1000, name: "alice" }, secret: SECRET_VALUE, items: [{ price: 42 }, { price: 7 }] };
    if (url.pathname === "/data" || url.pathname.startsWith("/data/")) {
      return Response.json(json, { headers: { [SECRET_HEADER]: SECRET_HEADER_VALUE } });
    }
    if (url.pathname === "/chunked" || url.pathname.startsWith("/chunked/")) {
      const text = JSON.stringify(json);
      const cut = text.indexOf(SECRET_VALUE) + 4; // a chunk boundary inside the secret
      const stream = new ReadableStream({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode(text.slice(0, cut)));
          await Bun.sleep(20);
          controller.enqueue(new TextEncoder().encode(text.slice(cut)));
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "application/json", [SECRET_HEADER]: SECRET_HEADER_VALUE } });
    }
    if (url.pathname === "/echo") {
      const sessionToken = request.headers.get("x-session-token");
      return Response.json(
        {
          method: request.method,
          path: `${url.pathname}${url.search}`,
          headers: Object.fromEntries(request.headers),
          body: await request.text(),
        },
        { headers: sessionToken === null ? {} : { "x-session-token": sessionToken } },
      );
    }
    if (url.pathname === "/refused") {
      const credential = (header: string) => (request.headers.get(header) ?? "").replace(/^\S+ +/, "");
      const [user, password] = Buffer.from(credential("x-service-authorization"), "base64").toString().split(":");
      const sid = /(?:^|; *)sid=([^;]*)/.exec(request.headers.get("cookie") ?? "")?.[1];
      const { password: bodyPassword } = (await request.json()) as { password: string };
      return Response.json(
        {
          error: `invalid api key ${credential("authorization")}`,
          session: `session ${sid} expired`,
          service: `service user ${user} refused password ${password}`,
          retry: `/login?password=${encodeURIComponent(bodyPassword)}`,
        },
        { status: 401 },
      );
    }
    if (url.pathname === "/gzip") {
      return new Response(Bun.gzipSync(JSON.stringify(json)), { headers: { "content-type": "application/json", "content-encoding": "gzip" } });
    }
    const status = /^\/status\/(\d{3})$/.exec(url.pathname);
    if (status) return Response.json({ status: Number(status[1]) }, { status: Number(status[1]) });
    if (url.pathname === "/slow") {
      const arrivedMs = performance.now();
      await Bun.sleep(Number(url.searchParams.get("ms") ?? 0));
      observe?.(`${url.pathname}${url.search}`, { arrivedMs, answeredMs: performance.now() });
      return Response.json(json);
    }
    if (url.pathname === "/big") return new Response("x".repeat(Number(url.searchParams.get("bytes") ?? 0)));
    if (url.pathname === "/counter") return Response.json({ count: ++count });
    return new Response("not found", { status: 404 });
  };
}

export interface VersionedTarget {
  port: number;
  stop(): void;
}

/**
 * The test routes behind a TLS server speaking only `version` (and only `ciphers`, when given, for TLS 1.2):
 * plain HTTP on loopback, fronted by node:tls, so that the version and cipher are the test's choice.
 */
export async function startVersionedTarget(tls: ServerIdentity, version: "TLSv1.2" | "TLSv1.3", ciphers?: string): Promise<VersionedTarget> {
  const inner = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: TARGET_IDLE_S, fetch: targetRoutes() });
  const front = createServer({ cert: tls.chainPem, key: tls.leafKeyPem, minVersion: version, maxVersion: version, ...(ciphers ? { ciphers } : {}) }, (socket) => {
    const upstream = connectTcp(inner.port!, "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const address = front.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return {
    port: address.port,
    stop() {
      front.close();
      inner.stop(true);
    },
  };
}

/** A TLS server that speaks only TLS 1.3, which the engine (TLS 1.2 only) cannot talk to. */
export async function startTls13OnlyTarget(tls: TlsFixture): Promise<{ server: TlsServer; port: number }> {
  const server = createServer({ cert: tls.chainPem, key: tls.leafKeyPem, minVersion: "TLSv1.3" }, (socket) => {
    socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no port");
  return { server, port: address.port };
}
