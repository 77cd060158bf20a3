/**
 * How a notary client's HTTP calls reach its notary: `fetch` over the network, or, for the notary a prover embeds,
 * its routes called in this process (`inProcessTransport`). The embedded notary is then spared a socket, Bun's HTTP
 * client thread and an HTTP parse on each side, about a millisecond a call on loopback; its relay stays a WebSocket.
 */
import { untilAborted } from "../../base/abort.ts";
import { AppError } from "../../core/errors.ts";

/** One HTTP call: the answer, or a rejection when the request could not be made or `init.signal` aborted it. */
export type NotaryTransport = (url: string, init: RequestInit) => Promise<Response>;

export const networkTransport: NotaryTransport = (url, init) => fetch(url, init);

/**
 * Calls go to `handle`, which answers as the notary's server would (the same routes, admission first): each request
 * declares its body's length, as an HTTP client would, and is given up when its signal aborts, as fetch would.
 */
export function inProcessTransport(handle: (request: Request) => Promise<Response>): NotaryTransport {
  return (url, init) => {
    const body = typeof init.body === "string" ? new TextEncoder().encode(init.body) : undefined;
    if (init.body !== undefined && init.body !== null && body === undefined) throw new AppError("internal", "an in-process notary call takes a text body");
    const headers = new Headers(init.headers);
    if (body) headers.set("content-length", String(body.length));
    return untilAborted(handle(new Request(url, { method: init.method, headers, body })), init.signal ?? undefined);
  };
}
