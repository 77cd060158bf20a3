/**
 * A prover of its own making on a notary's proxy-mode routes: it creates sessions, opens the relay WebSocket and
 * sends whatever bytes a test chooses, in the messages it chooses, then reads how the notary ended the relay.
 */
export interface RawRelay {
  ws: WebSocket;
  /** Everything the notary passed back from the target. */
  received(): Uint8Array;
  /** How the notary closed the relay. */
  closed: Promise<{ code: number; reason: string }>;
  send(bytes: Uint8Array): void;
}

export interface RawNotary {
  url: string;
  /** `Authorization` for a notary with a whitelist. */
  apiKey?: string;
}

const authorization = (notary: RawNotary): Record<string, string> => (notary.apiKey ? { authorization: `Bearer ${notary.apiKey}` } : {});

/** `POST /proxy-session` as it answered. */
export const postProxySession = (notary: RawNotary, serverName: string, port: number): Promise<Response> =>
  fetch(`${notary.url}/proxy-session`, {
    method: "POST",
    headers: { "content-type": "application/json", ...authorization(notary) },
    body: JSON.stringify({ serverName, port }),
  });

/** A session's id; throws with the notary's answer when it refused. */
export async function createProxySession(notary: RawNotary, serverName: string, port: number): Promise<string> {
  const response = await postProxySession(notary, serverName, port);
  const body = (await response.json()) as { sessionId?: string };
  if (!body.sessionId) throw new Error(`POST /proxy-session answered ${response.status}: ${JSON.stringify(body)}`);
  return body.sessionId;
}

/** `POST /proxy-session/{id}/attestation` with `body`, as it answered. */
export const postProxyAttestation = (notary: RawNotary, sessionId: string, body: unknown): Promise<Response> =>
  fetch(`${notary.url}/proxy-session/${sessionId}/attestation`, {
    method: "POST",
    headers: { "content-type": "application/json", ...authorization(notary) },
    body: JSON.stringify(body),
  });

/** Opens the session's relay; rejects when the notary refuses the upgrade. */
export function openRawRelay(notary: RawNotary, sessionId: string): Promise<RawRelay> {
  const ws = new WebSocket(`${notary.url.replace(/^http/, "ws")}/relay?sessionId=${encodeURIComponent(sessionId)}`);
  ws.binaryType = "arraybuffer";
  const chunks: Uint8Array[] = [];
  ws.onmessage = (event) => chunks.push(new Uint8Array(event.data as ArrayBuffer));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
  });
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve({ ws, received: () => new Uint8Array(Buffer.concat(chunks)), closed, send: (bytes) => ws.send(bytes) });
    ws.onerror = () => reject(new Error("the notary refused the relay socket"));
  });
}
