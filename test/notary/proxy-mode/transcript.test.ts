/**
 * Proxy mode's verified transcript on real sessions through the notary's own relay: dated by the relay's log (the
 * certificate checked at the ServerHello's time), refused when asked for after the attestation window, the request
 * as the notary read it (whole with the client's keys, or its length only).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import { type ProxyVerification, proxyTranscript } from "../../../src/notary/proxy-mode/transcript.ts";
import { createServer as createTlsServer } from "node:tls";
import { keysOfEpochExchange, keysToReveal } from "../../../src/tls/verify-session.ts";
import { issueCertificate, issueServerCertificate, makeTestCa } from "../../../src/engine/test-ca.ts";
import { TARGET_HOST } from "../../../testkit/tls-fixture.ts";
import { type Target, startHttpsTarget } from "../../tls/support/exchange.ts";
import { verifyIdentities } from "../../tls/support/identities.ts";
import { dns, nameConstraints } from "../../tls/support/name-constraints.ts";
import { type RelayedThrough, epochExchangeThroughRelay, exchangeThroughRelay } from "./support/relayed.ts";

// Each test takes well under a second: one that waits for an end that never comes fails in seconds, not minutes.
setDefaultTimeout(3_000);

const ids = verifyIdentities();
const BODY = "the answer: 42\n";
const REQUEST = `GET /data HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nConnection: close\r\n\r\n`;
const WINDOW_MS = 10_000;
const options: ProxyVerification = { trustAnchorsPem: [ids.fixture.caPem], attestationWindowMs: WINDOW_MS, maxHiddenSpanBytes: 77 };

let tls13: Target;
let tls12: Target;
let exchange13: RelayedThrough;
let exchange12: RelayedThrough;

beforeAll(async () => {
  tls13 = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.3" }, BODY);
  tls12 = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, BODY);
  exchange13 = await exchangeThroughRelay(tls13.port, REQUEST, { ca: [ids.fixture.caPem] });
  exchange12 = await exchangeThroughRelay(tls12.port, REQUEST, { ca: [ids.fixture.caPem] });
});

afterAll(async () => {
  await Promise.all([tls13?.stop(), tls12?.stop()]);
});

const keysOf = (exchange: RelayedThrough, revealRequest: boolean) => keysToReveal(exchange.keylog, exchange.relayed.bytes, revealRequest);

/** The relay's times from its own log, as the test reads them. */
function logTimes(exchange: RelayedThrough) {
  const targetBytes = exchange.relayed.events.filter((event) => event.kind === "target-bytes");
  const ends = exchange.relayed.events.filter((event) => event.kind === "target-fin").map((event) => event.at);
  const last = targetBytes.at(-1)!.at;
  return { first: targetBytes[0]!.at, last, ended: Math.max(last, ...ends) };
}

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return { code: (error as AppError).code, message: (error as AppError).message };
  }
  throw new Error("expected a refusal");
}

describe("proxy mode's verified transcript", () => {
  test("TLS 1.3, request hidden: dated by the relay's log, its request's length only, the answer whole", () => {
    const { first, last, ended } = logTimes(exchange13);
    const transcript = proxyTranscript(exchange13.relayed, keysOf(exchange13, false), options, ended);
    expect(transcript).toMatchObject({
      mode: "proxy",
      serverName: TARGET_HOST,
      serverPort: tls13.port,
      tlsVersion: "TLS1.3",
      connectionTime: Math.floor(first / 1000),
      responseTime: Math.floor(last / 1000),
      hiddenBy: "notary",
      alpn: null,
    });
    // The rule holds a request written in epochs; a request hidden whole, or seen whole, has none to keep.
    expect(transcript.requestRule).toBeUndefined();
    // Without the client's keys its length counts its records (a closing alert's two bytes too): the request's, at least.
    expect(transcript.sent.bytes).toBeNull();
    expect(transcript.sent.seen).toEqual([]);
    expect(transcript.sent.length).toBeGreaterThanOrEqual(REQUEST.length);
    expect(transcript.recv).toEqual({ length: exchange13.answer.length, bytes: exchange13.answer, seen: [{ start: 0, end: exchange13.answer.length }] });
    expect(new TextDecoder().decode(transcript.recv.bytes!)).toEndWith(BODY);
  });

  test("with the client's keys the request is seen whole", () => {
    for (const exchange of [exchange13, exchange12]) {
      const transcript = proxyTranscript(exchange.relayed, keysOf(exchange, true), options, logTimes(exchange).ended);
      const request = new TextEncoder().encode(REQUEST);
      expect(transcript.sent).toEqual({ length: request.length, bytes: request, seen: [{ start: 0, end: request.length }] });
    }
  });

  test("TLS 1.2: the version, and an end of the server's own the client did not ask for", () => {
    const transcript = proxyTranscript(exchange12.relayed, keysOf(exchange12, true), options, logTimes(exchange12).ended);
    expect(transcript.tlsVersion).toBe("TLS1.2");
    expect(transcript.connectionEnd).toEqual({ closed: true });
  });

  test("asked for within the window, signed; a millisecond later, attestation_late", () => {
    const { ended } = logTimes(exchange13);
    const keys = keysOf(exchange13, false);
    expect(proxyTranscript(exchange13.relayed, keys, options, ended + WINDOW_MS).mode).toBe("proxy");
    expect(refusal(() => proxyTranscript(exchange13.relayed, keys, options, ended + WINDOW_MS + 1))).toEqual({
      code: "attestation_late",
      message: "the attestation was asked for 10.0 s after the relay ended; this notary signs only within 10 s of it",
    });
    expect(refusal(() => proxyTranscript(exchange13.relayed, keys, { ...options, attestationWindowMs: 2_500 }, ended + 4_260)).message).toBe(
      "the attestation was asked for 4.3 s after the relay ended; this notary signs only within 2.5 s of it",
    );
  });

  test("the window runs from the target's FIN when it came after its last byte", () => {
    const { last } = logTimes(exchange13);
    const events = [...exchange13.relayed.events.filter((event) => event.kind !== "target-fin"), { kind: "target-fin" as const, at: last + 5_000 }];
    const relayed = { ...exchange13.relayed, events };
    const keys = keysOf(exchange13, false);
    expect(proxyTranscript(relayed, keys, options, last + 5_000 + WINDOW_MS).responseTime).toBe(Math.floor(last / 1000));
    expect(refusal(() => proxyTranscript(relayed, keys, options, last + 5_001 + WINDOW_MS)).code).toBe("attestation_late");
  });

  test("the certificate is checked at the time the relay carried the ServerHello", () => {
    // The same bytes, logged as if they had passed in 2001: the test CA's certificates were not valid then.
    const shift = Date.UTC(2001, 0, 1) - logTimes(exchange13).first;
    const events = exchange13.relayed.events.map((event) => ({ ...event, at: event.at + shift }));
    const relayed = { ...exchange13.relayed, events };
    const refused = refusal(() => proxyTranscript(relayed, keysOf(exchange13, false), options, Date.UTC(2001, 0, 1, 0, 0, 1)));
    expect(refused.code).toBe("tls_untrusted");
    expect(refused.message).toContain("is not valid at 2001-01-01T00:00:00.000Z");
  });

  test("a relay the target sent nothing through is refused", () => {
    const relayed = { ...exchange13.relayed, events: exchange13.relayed.events.filter((event) => event.kind !== "target-bytes") };
    expect(refusal(() => proxyTranscript(relayed, keysOf(exchange13, false), options, Date.now()))).toEqual({
      code: "transcript_invalid",
      message: "the target sent nothing through the relay",
    });
  });
});

describe("the request as the notary read it", () => {
  test("in epochs: the revealed ones seen, the hidden ones zero and unseen, the length whole", async () => {
    const encoder = new TextEncoder();
    const [line, secret, rest] = [`GET /data HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nAuthorization: `, "Bearer hidden-credential", "\r\nConnection: close\r\n\r\n"];
    const parts = [
      { bytes: encoder.encode(line), hidden: false },
      { bytes: encoder.encode(secret), hidden: true },
      { bytes: encoder.encode(rest), hidden: false },
    ];
    const { relayed, exchange } = await epochExchangeThroughRelay(tls13.port, parts, ids.fixture.caPem);
    const transcript = proxyTranscript(relayed, keysOfEpochExchange(exchange), options, logTimes({ relayed } as RelayedThrough).ended);
    const length = line.length + secret.length + rest.length;
    const expected = encoder.encode(line + secret + rest);
    expected.fill(0, line.length, line.length + secret.length);
    expect(transcript.sent).toEqual({
      length,
      bytes: expected,
      seen: [
        { start: 0, end: line.length },
        { start: line.length + secret.length, end: length },
      ],
    });
  });

  test("a client that sent no application data, its keys revealed: an empty request, none of it seen", async () => {
    // A server that speaks first: its answer needs no request.
    const server = createTlsServer({ key: ids.ecdsa.leafKeyPem, cert: ids.ecdsa.chainPem, minVersion: "TLSv1.2", maxVersion: "TLSv1.2" }, (socket) => {
      socket.on("error", () => {});
      socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const silent = await exchangeThroughRelay(port, "", { ca: [ids.fixture.caPem] });
      const transcript = proxyTranscript(silent.relayed, keysOf(silent, true), options, logTimes(silent).ended);
      expect(transcript.sent).toEqual({ length: 0, bytes: new Uint8Array(0), seen: [] });
      expect(transcript.recv.seen).toEqual([{ start: 0, end: silent.answer.length }]);
    } finally {
      server.close();
    }
  });
});

describe("the certificate chain", () => {
  test("a leaf from an intermediate whose name constraints do not permit it: the notary refuses to sign", async () => {
    const anchor = makeTestCa();
    const intermediate = issueCertificate({ subject: { commonName: "Constrained CA" }, ca: {}, extensions: [nameConstraints({ permitted: [dns("example.org")] })] }, anchor);
    const leaf = issueServerCertificate(intermediate, [TARGET_HOST]);
    const target = await startHttpsTarget({ leafKeyPem: leaf.keyPem, chainPem: leaf.pem + intermediate.pem }, { version: "TLSv1.3" }, BODY);
    try {
      // The prover's client takes any chain here: the notary's check is the one under test.
      const exchange = await exchangeThroughRelay(target.port, REQUEST, { rejectUnauthorized: false });
      expect(exchange.answer.length).toBeGreaterThan(0);
      expect(refusal(() => proxyTranscript(exchange.relayed, keysOf(exchange, false), { ...options, trustAnchorsPem: [anchor.pem] }, logTimes(exchange).ended))).toEqual({
        code: "tls_untrusted",
        message: `the intermediate certificate (CN=Constrained CA) does not permit the name ${TARGET_HOST} (name constraints)`,
      });
    } finally {
      await target.stop();
    }
  });
});
