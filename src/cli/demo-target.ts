/**
 * The demo's local HTTPS API (`cli demo`, `cli testca --serve`): a small JSON API with a certificate from a test CA.
 * TLS 1.2 as well as 1.3, so that MPC mode (TLS 1.2 only) can talk to it.
 */
import type { Server } from "bun";

export const DEMO_HOST = "api.demo.test";
/** The API's token for /v1/account: sent as Authorization, hidden by default in the proof. */
export const DEMO_TOKEN = "demo-token-not-a-secret";

export interface DemoTarget {
  port: number;
  stop(): void;
}

function routes(request: Request): Response {
  const url = new URL(request.url);
  if (url.pathname === "/v1/account") {
    if (request.headers.get("authorization") !== `Bearer ${DEMO_TOKEN}`) return Response.json({ error: "unauthorized" }, { status: 401 });
    return Response.json({ user: Number(url.searchParams.get("user") ?? 0), name: "alice", balance: "1234.50", currency: "EUR" });
  }
  if (url.pathname === "/v1/price") {
    return Response.json({ pair: url.searchParams.get("pair") ?? "ETH-EUR", price: "2875.10", at: new Date().toISOString() });
  }
  return Response.json({ error: "not found" }, { status: 404 });
}

/** The API on `hostname:port` (loopback and a free port by default). */
export function startDemoTarget(chainPem: string, keyPem: string, hostname = "127.0.0.1", port = 0): DemoTarget {
  const server: Server<undefined> = Bun.serve({ hostname, port, tls: { cert: chainPem, key: keyPem }, fetch: routes });
  return { port: server.port!, stop: () => void server.stop(true) };
}
