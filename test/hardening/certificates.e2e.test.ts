import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { tlsFixture } from "../../testkit/env.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { errorData, firstEvent } from "../../testkit/sse.ts";
import { TARGET_HOST, type ServerIdentity, type UntrustedIdentities, makeUntrustedIdentities } from "../../testkit/tls-fixture.ts";
import { eventually } from "../../testkit/notary.ts";

/**
 * The certificate check, through a real `cli prover start` (embedded notary, real MPC sessions) that trusts the
 * test CA. TLS 1.2 servers it must refuse: one whose chain ends in another CA with the trusted root's exact subject
 * but its own key (an impostor root), one with a certificate from the trusted CA for another host, one whose
 * certificate names the host in its subject but not in its subjectAltName, an expired one, a self-signed one, and
 * one that leaves out the intermediate CA between its certificate and the trusted root. Switching chain, date or
 * host-name checking off would let anyone between prover and server forge proofs.
 */
const MPC_MS = 180_000;

/** A TLS server presenting `identity` that counts the HTTP requests it was sent. */
function countingServer(identity: ServerIdentity): { server: Server<undefined>; requests: () => number } {
  let requests = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: identity.chainPem, key: identity.leafKeyPem },
    fetch() {
      requests += 1;
      return Response.json({ secret: "served-to-an-untrusted-session" });
    },
  });
  return { server, requests: () => requests };
}

let prover: RunningProver;
let servers: Record<keyof UntrustedIdentities, ReturnType<typeof countingServer>>;

beforeAll(async () => {
  const untrusted = makeUntrustedIdentities(tlsFixture());
  servers = Object.fromEntries(Object.entries(untrusted).map(([name, identity]) => [name, countingServer(identity)])) as typeof servers;
  const ports = Object.values(servers).map(({ server }) => server.port!);
  prover = await startProver(SOURCE_CLI, ports[0]!, {
    PROVER_RESOLVE: ports.map((port) => `${TARGET_HOST}:${port}:127.0.0.1`).join(","),
    PROVER_ALLOWED_PORTS: ports.join(","),
    // The handshake fails before any data: the smallest sessions do.
    PROVER_MAX_SENT_DATA: "512",
    PROVER_MAX_RECV_DATA: "1024",
  });
}, 90_000);

afterAll(async () => {
  await prover?.stop();
  for (const { server } of Object.values(servers ?? {})) server.stop(true);
}, 120_000);

const notarySessions = async () =>
  ((await (await fetch(`${prover.url}/pool`)).json()) as { notarySessions: number | null }).notarySessions;

describe("an untrusted server certificate: no proof, and an error that says the certificate was not trusted", () => {
  test.each([
    ["chain ends in another CA with the trusted root's subject", "impostorCa", "its chain does not end in a trusted root"],
    ["certificate from the trusted CA names another host", "wrongHost", `it is not valid for ${TARGET_HOST}`],
    ["certificate names the host in its subject only, another in its subjectAltName", "altNameMismatch", `it is not valid for ${TARGET_HOST}`],
    ["certificate from the trusted CA expired", "expired", "it is outside its validity period"],
    ["certificate signed by its own key", "selfSigned", "its chain does not end in a trusted root"],
    ["chain leaves out the intermediate CA", "missingIntermediate", "its chain does not end in a trusted root"],
  ] as [string, keyof UntrustedIdentities, string][])(
    "%s",
    async (_, name, reason) => {
      const server = () => servers[name];
      const requestId = crypto.randomUUID();
      const event = firstEvent(`${prover.url}/proof/${requestId}`, MPC_MS);
      const response = await fetch(`${prover.url}/proxy`, {
        headers: { "t-proxy-url": `https://${TARGET_HOST}:${server().server.port}/data`, "t-request-id": requestId },
      });
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(response.status).toBe(502);
      expect(response.headers.get("t-proof-id")).toBeNull();
      expect(body.error.code).toBe("tls_untrusted");
      expect(body.error.message).toBe(`the target's certificate was not trusted: ${reason}; no proof is made`);
      expect(errorData(await event)).toEqual({ requestId, code: "tls_untrusted", message: body.error.message });
      // The handshake stopped at the certificate: the request was never sent to that server.
      expect(server().requests()).toBe(0);
      // Nothing stored under that id, and the notary's side of the session is gone.
      const stored = (await (await fetch(`${prover.url}/stores/proofs/data/partitions/0/last?count=100`)).json()) as {
        messages: { content: { body: { requestId: string } } }[];
      };
      expect(stored.messages.map((m) => m.content.body.requestId)).not.toContain(requestId);
      expect(await eventually(notarySessions, (n) => n === 0, 10_000)).toBe(0);
    },
    MPC_MS,
  );
});
