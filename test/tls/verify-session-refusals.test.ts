import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import type { ErrorCode } from "../../src/core/errors.ts";
import { type RelayedBytes, type RevealedKeys, type SessionExpectations, keysToReveal, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { HandshakeType } from "../../src/tls/records.ts";
import { readHellos } from "../../src/tls/session-start.ts";
import { OTHER_HOST, TARGET_HOST, makeUntrustedIdentities } from "../../testkit/tls-fixture.ts";
import { type RecordedExchange, type Target, relayedExchange, startHttpsTarget } from "./support/exchange.ts";
import { verifyIdentities } from "./support/identities.ts";
import { expectRefusal as expectAppError } from "./support/refusal.ts";

/**
 * What the verifier must refuse, on real sessions: keys that are wrong or from another session, relayed bytes
 * changed, a name, chain or time the certificate does not fit, resumed sessions and suites outside the policy.
 */

const ids = verifyIdentities();
const targets: Target[] = [];
afterAll(async () => {
  await Promise.all(targets.map((t) => t.stop()));
});

async function target(version: "TLSv1.2" | "TLSv1.3", ciphers?: string): Promise<Target> {
  const t = await startHttpsTarget(ids.ecdsa, { version, ciphers }, "hello from the target\n");
  targets.push(t);
  return t;
}

const expectations = (over: Partial<SessionExpectations> = {}): SessionExpectations => ({
  serverName: TARGET_HOST,
  trustAnchorsPem: [ids.fixture.caPem],
  now: new Date(),
  ...over,
});

/** Runs `run`, expecting an AppError of `code` whose message matches `message` and shows no revealed key. */
function expectRefusal(run: () => unknown, code: ErrorCode, message: RegExp, keys?: RevealedKeys): void {
  const values = Object.values(keys ?? {}).filter((value): value is string => typeof value === "string" && value !== keys?.version);
  expectAppError(run, code, message, values);
}

/** The hex with its byte at `index` changed. */
const flipHex = (hex: string, index = 0): string =>
  hex.slice(0, 2 * index) + ((Number.parseInt(hex.slice(2 * index, 2 * index + 2), 16) ^ 0x01).toString(16).padStart(2, "0")) + hex.slice(2 * index + 2);

/** The relayed bytes with the server's byte at `offset` (from the end when negative) changed. */
function flipServerByte(relayed: RelayedBytes, offset: number): RelayedBytes {
  const serverToClient = relayed.serverToClient.slice();
  const at = offset < 0 ? serverToClient.length + offset : offset;
  serverToClient[at] = (serverToClient[at] ?? 0) ^ 0x01;
  return { ...relayed, serverToClient };
}

/** Where the last whole record of a relayed direction starts. */
function lastRecordOffset(stream: Uint8Array): number {
  let offset = 0;
  let last = 0;
  while (offset + 5 <= stream.length) {
    last = offset;
    offset += 5 + (((stream[offset + 3] ?? 0) << 8) | (stream[offset + 4] ?? 0));
  }
  return last;
}

describe.each(["TLSv1.2", "TLSv1.3"] as const)("%s", (version) => {
  let port: number;
  let first: RecordedExchange;
  let firstKeys: RevealedKeys;
  beforeAll(async () => {
    port = (await target(version)).port;
    first = await relayedExchange(port, { ca: ids.fixture.caPem });
    firstKeys = keysToReveal(first.keylog, first.relayed, false);
    // The untouched session verifies: each refusal below comes from the one thing it changes.
    expect(verifyRelayedSession(first.relayed, firstKeys, expectations()).recv).toEqual(first.answer);
  });

  test("a server key with one byte changed does not open the server's records", () => {
    const keys: RevealedKeys =
      firstKeys.version === "TLS1.3"
        ? { ...firstKeys, serverApplicationTrafficSecret: flipHex(firstKeys.serverApplicationTrafficSecret, 5) }
        : { ...firstKeys, serverWriteKey: flipHex(firstKeys.serverWriteKey ?? "", 5) };
    expectRefusal(() => verifyRelayedSession(first.relayed, keys, expectations()), "transcript_invalid", /does not authenticate under the revealed server/, keys);
  });

  test("the IV or handshake secret with one byte changed is refused too", () => {
    const keys: RevealedKeys =
      firstKeys.version === "TLS1.3"
        ? { ...firstKeys, serverHandshakeTrafficSecret: flipHex(firstKeys.serverHandshakeTrafficSecret, 0) }
        : { ...firstKeys, serverWriteIv: flipHex(firstKeys.serverWriteIv ?? "", 0) };
    expectRefusal(() => verifyRelayedSession(first.relayed, keys, expectations()), "transcript_invalid", /does not authenticate under the revealed server/, keys);
  });

  test("keys from an earlier session do not open a later one (replay)", async () => {
    const later = await relayedExchange(port, { ca: ids.fixture.caPem });
    expectRefusal(() => verifyRelayedSession(later.relayed, firstKeys, expectations()), "transcript_invalid", /does not authenticate/, firstKeys);
  });

  test("the client's side with one byte changed is refused when the request is revealed (TLS 1.3 traffic secret, TLS 1.2 master secret)", () => {
    const keys = keysToReveal(first.keylog, first.relayed, true);
    const wrong: RevealedKeys =
      keys.version === "TLS1.3"
        ? { ...keys, clientApplicationTrafficSecret: flipHex(keys.clientApplicationTrafficSecret ?? "", 3) }
        : { ...keys, masterSecret: flipHex(keys.masterSecret ?? "", 3) };
    expectRefusal(() => verifyRelayedSession(first.relayed, wrong, expectations()), "transcript_invalid", /protected record \d+ does not authenticate/, wrong);
  });

  // TLS 1.2 only: its keys come in two forms.
  if (version === "TLSv1.2") test("TLS 1.2 keys in neither form, or in both", () => {
    const master = keysToReveal(first.keylog, first.relayed, true);
    expectRefusal(() => verifyRelayedSession(first.relayed, { version: "TLS1.2" }, expectations()), "transcript_invalid", /hold neither the master secret nor the server write key and IV/);
    expectRefusal(() => verifyRelayedSession(first.relayed, { ...firstKeys, ...master }, expectations()), "transcript_invalid", /either the master secret or the server write key and IV, not both/);
  });

  test("one relayed byte of the server's last record changed", () => {
    expectRefusal(() => verifyRelayedSession(flipServerByte(first.relayed, -3), firstKeys, expectations()), "transcript_invalid", /server's protected record \d+ does not authenticate/);
  });

  test("one byte of the server random changed: the signature no longer binds the handshake", () => {
    // Record header (5) + handshake header (4) + version (2): the server random starts at byte 11.
    expectRefusal(() => verifyRelayedSession(flipServerByte(first.relayed, 20), firstKeys, expectations()), "tls_untrusted", /signature does not verify/);
  });

  test("another expected server name than the ClientHello's", () => {
    expectRefusal(() => verifyRelayedSession(first.relayed, firstKeys, expectations({ serverName: OTHER_HOST })), "tls_untrusted", /ClientHello names server "target\.tlsproof\.test", not elsewhere/);
  });

  test("a trust anchor list without the server's CA", () => {
    makeUntrustedIdentities(ids.fixture);
    const impostorCa = readFileSync(join(ids.fixture.dir, "impostor-ca.pem"), "utf8");
    expectRefusal(() => verifyRelayedSession(first.relayed, firstKeys, expectations({ trustAnchorsPem: [impostorCa] })), "tls_untrusted", /does not lead to a trusted anchor/);
  });

  test("a certificate that has expired at the time of the check", () => {
    const leafEnd = new X509Certificate(ids.fixture.chainPem).validToDate;
    const after = new Date(leafEnd.getTime() + 24 * 3600 * 1000);
    expectRefusal(() => verifyRelayedSession(first.relayed, firstKeys, expectations({ now: after })), "tls_untrusted", /server's certificate .* is not valid at/);
  });

  test("a relay cut off in the middle of the server's handshake", () => {
    const cut = { ...first.relayed, serverToClient: first.relayed.serverToClient.subarray(0, 400) };
    expectRefusal(() => verifyRelayedSession(cut, firstKeys, expectations()), "transcript_invalid", /server's bytes end before its/);
  });

  test("a record after the server's close_notify", () => {
    const { serverToClient } = first.relayed;
    const lastRecordAt = lastRecordOffset(serverToClient);
    const extended = { ...first.relayed, serverToClient: concatBytes(serverToClient, serverToClient.subarray(lastRecordAt)) };
    expectRefusal(() => verifyRelayedSession(extended, firstKeys, expectations()), "transcript_invalid", /sent records after its close_notify alert/);
  });

  test("a relay that stopped inside a final record leaves that record out", () => {
    const { serverToClient } = first.relayed;
    const partial = serverToClient.subarray(lastRecordOffset(serverToClient), lastRecordOffset(serverToClient) + 9);
    const extended = { ...first.relayed, serverToClient: concatBytes(serverToClient, partial) };
    expect(verifyRelayedSession(extended, firstKeys, expectations()).recv).toEqual(first.answer);
  });

  test("revealed values that are not hex, or not of the length the suite needs", () => {
    const name = firstKeys.version === "TLS1.3" ? "server application traffic secret" : "server write key";
    const field = firstKeys.version === "TLS1.3" ? "serverApplicationTrafficSecret" : "serverWriteKey";
    const value = (firstKeys as Record<string, string>)[field]!;
    const withValue = (v: string) => ({ ...firstKeys, [field]: v }) as RevealedKeys;
    expectRefusal(() => verifyRelayedSession(first.relayed, withValue(`zz${value.slice(2)}`), expectations()), "transcript_invalid", new RegExp(`^the revealed ${name} is not hex$`));
    expectRefusal(() => verifyRelayedSession(first.relayed, withValue(value.slice(1)), expectations()), "transcript_invalid", new RegExp(`^the revealed ${name} is not hex$`));
    expectRefusal(() => verifyRelayedSession(first.relayed, withValue(value.slice(2)), expectations()), "transcript_invalid", new RegExp(`^the revealed ${name} has ${value.length / 2 - 1} bytes; the cipher suite needs ${value.length / 2}$`));
    // Upper-case hex is hex.
    expect(verifyRelayedSession(first.relayed, withValue(value.toUpperCase()), expectations()).recv).toEqual(first.answer);
  });

  test("one of a pair of client or server keys without the other, either one", () => {
    const full = keysToReveal(first.keylog, first.relayed, true);
    if (full.version === "TLS1.3") {
      const { clientApplicationTrafficSecret: _, ...withoutApplication } = full;
      const { clientHandshakeTrafficSecret: __, ...withoutHandshake } = full;
      for (const half of [withoutApplication, withoutHandshake]) {
        expectRefusal(() => verifyRelayedSession(first.relayed, half, expectations()), "transcript_invalid", /^the revealed client keys are incomplete: both client traffic secrets are needed$/);
      }
    } else {
      const { serverWriteIv: _, ...withoutIv } = firstKeys as Extract<RevealedKeys, { version: "TLS1.2" }>;
      const { serverWriteKey: __, ...withoutKey } = firstKeys as Extract<RevealedKeys, { version: "TLS1.2" }>;
      for (const half of [withoutIv, withoutKey]) {
        expectRefusal(() => verifyRelayedSession(first.relayed, half, expectations()), "transcript_invalid", /^the revealed client keys are incomplete: the server write key and IV go together$/);
      }
    }
  });

  test("each revealed value named when it is not hex or not of its length", () => {
    const full = keysToReveal(first.keylog, first.relayed, true);
    const cases: [RevealedKeys, RegExp][] =
      full.version === "TLS1.3"
        ? [
            [{ ...firstKeys, serverHandshakeTrafficSecret: "zz" } as RevealedKeys, /^the revealed server handshake traffic secret is not hex$/],
            [{ ...full, clientHandshakeTrafficSecret: "zz" } as RevealedKeys, /^the revealed client handshake traffic secret is not hex$/],
            [{ ...full, clientApplicationTrafficSecret: "zz" } as RevealedKeys, /^the revealed client application traffic secret is not hex$/],
            [{ ...firstKeys, clientEpochs: [{ records: 1, key: "zz", iv: "00".repeat(12) }] } as RevealedKeys, /^the revealed client epoch 0's key is not hex$/],
            [{ ...firstKeys, clientEpochs: [{ records: 1, key: "00".repeat(16), iv: "00".repeat(11) }] } as RevealedKeys, /^the revealed client epoch 0's IV has 11 bytes; the cipher suite needs 12$/],
          ]
        : [
            [{ ...firstKeys, serverWriteIv: "00".repeat(3) } as RevealedKeys, /^the revealed server write IV has 3 bytes; the cipher suite needs 4$/],
            [{ ...firstKeys, serverWriteKey: "00".repeat(15) } as RevealedKeys, /^the revealed server write key has 15 bytes; the cipher suite needs 16$/],
          ];
    for (const [keys, message] of cases) expectRefusal(() => verifyRelayedSession(first.relayed, keys, expectations()), "transcript_invalid", message);
  });

  test("the expected name matches case-blind; the verified session says what it checked", () => {
    const now = new Date(Date.now() + 1500);
    const verified = verifyRelayedSession(first.relayed, firstKeys, expectations({ serverName: TARGET_HOST.toUpperCase(), now }));
    expect(verified.serverName).toBe(TARGET_HOST.toUpperCase());
    expect(verified.connectionTime).toBe(Math.floor(now.getTime() / 1000));
    expect(verified.tlsVersion).toBe(version === "TLSv1.3" ? "TLS1.3" : "TLS1.2");
    expect(verified.alpn).toBeNull();
  });

  test("the key log: only this connection's lines count, whatever their case; a missing secret is named", () => {
    const clientRandom = Buffer.from(readHellos(first.relayed).clientHello.random).toString("hex");
    const upper = first.keylog.map((line) => line.toUpperCase());
    expect(keysToReveal(upper, first.relayed, true)).toEqual(keysToReveal(first.keylog, first.relayed, true));
    const others = first.keylog.map((line) => line.replace(clientRandom, "00".repeat(32)));
    const label = version === "TLSv1.3" ? "SERVER_HANDSHAKE_TRAFFIC_SECRET" : "CLIENT_RANDOM";
    expectRefusal(() => keysToReveal(others, first.relayed, false), "transcript_invalid", new RegExp(`^the TLS key log has no ${label} for this connection$`));
    const notHex = first.keylog.map((line) => (line.startsWith(label) ? `${line.trim()}zz` : line));
    expectRefusal(() => keysToReveal(notHex, first.relayed, false), "transcript_invalid", new RegExp(`no ${label} for this connection`));
    const hexAfterJunk = first.keylog.map((line) => (line.startsWith(label) ? line.trim().replace(/ (\S+)$/, " zz$1") : line));
    expectRefusal(() => keysToReveal(hexAfterJunk, first.relayed, false), "transcript_invalid", new RegExp(`no ${label} for this connection`));
    // Fields apart by any run of blanks, a line indented, a lone word and an empty line among them: read the same.
    const loose = [...first.keylog.map((line) => `  ${line.trim().split(" ").join(" \t ")}\n`), "CLIENT_RANDOM", ""];
    expect(keysToReveal(loose, first.relayed, true)).toEqual(keysToReveal(first.keylog, first.relayed, true));
    if (version === "TLSv1.3") {
      const withoutClient = first.keylog.filter((line) => !line.startsWith("CLIENT_TRAFFIC_SECRET_0"));
      expect(keysToReveal(withoutClient, first.relayed, false)).toEqual(firstKeys);
      expectRefusal(() => keysToReveal(withoutClient, first.relayed, true), "transcript_invalid", /^the TLS key log has no CLIENT_TRAFFIC_SECRET_0 for this connection$/);
    }
  });

  test("keys for the other TLS version", () => {
    const other: RevealedKeys =
      firstKeys.version === "TLS1.3"
        ? { version: "TLS1.2", serverWriteKey: "00".repeat(16), serverWriteIv: "00".repeat(4) }
        : { version: "TLS1.3", serverHandshakeTrafficSecret: "00".repeat(32), serverApplicationTrafficSecret: "00".repeat(32) };
    expectRefusal(() => verifyRelayedSession(first.relayed, other, expectations()), "transcript_invalid", /keys are for TLS1\.\d, but the session is TLS1\.\d/);
  });
});

test("a certificate for another name than the one the client asked for", async () => {
  const { port } = await target("TLSv1.3");
  // The client names OTHER_HOST and accepts the certificate for TARGET_HOST: the notary must not.
  const exchange = await relayedExchange(port, { ca: ids.fixture.caPem, servername: OTHER_HOST, checkServerIdentity: () => undefined });
  const keys = keysToReveal(exchange.keylog, exchange.relayed, false);
  expectRefusal(() => verifyRelayedSession(exchange.relayed, keys, expectations({ serverName: OTHER_HOST })), "tls_untrusted", /certificate is not valid for elsewhere/);
});

test("a resumed TLS 1.2 session", async () => {
  const { port } = await target("TLSv1.2");
  const full = await relayedExchange(port, { ca: ids.fixture.caPem });
  expect(full.session).toBeDefined();
  const resumed = await relayedExchange(port, { ca: ids.fixture.caPem, session: full.session });
  expect(resumed.reused).toBe(true);
  const keys = keysToReveal(resumed.keylog, resumed.relayed, false);
  expectRefusal(() => verifyRelayedSession(resumed.relayed, keys, expectations()), "tls_unsupported", /resumed a TLS 1\.2 session/);
});

test("a TLS 1.3 session resumed with a pre-shared key", async () => {
  const { port } = await target("TLSv1.3");
  const full = await relayedExchange(port, { ca: ids.fixture.caPem });
  expect(full.session).toBeDefined();
  const resumed = await relayedExchange(port, { ca: ids.fixture.caPem, session: full.session });
  expect(resumed.reused).toBe(true);
  expectRefusal(() => keysToReveal(resumed.keylog, resumed.relayed, false), "tls_unsupported", /pre-shared key/);
  // The verifier refuses it whatever keys come with it.
  const secret = (label: string) => resumed.keylog.map((line) => line.trim().split(" ")).find(([name]) => name === label)?.[2] ?? "";
  const keys: RevealedKeys = {
    version: "TLS1.3",
    serverHandshakeTrafficSecret: secret("SERVER_HANDSHAKE_TRAFFIC_SECRET"),
    serverApplicationTrafficSecret: secret("SERVER_TRAFFIC_SECRET_0"),
  };
  expectRefusal(() => verifyRelayedSession(resumed.relayed, keys, expectations()), "tls_unsupported", /pre-shared key/);
});

test("a TLS 1.3 server that asks for another key share (HelloRetryRequest): the session verifies, and the first ClientHello is bound", async () => {
  const t = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.3", ecdhCurve: "P-384" }, "after a retry\n");
  targets.push(t);
  const exchange = await relayedExchange(t.port, { ca: ids.fixture.caPem });
  // The transcript starts with the message_hash that stands for the first ClientHello only after a retry.
  expect(readHellos(exchange.relayed).transcript[0]?.[0]).toBe(HandshakeType.messageHash);
  const keys = keysToReveal(exchange.keylog, exchange.relayed, true);
  const verified = verifyRelayedSession(exchange.relayed, keys, expectations());
  expect(new TextDecoder().decode(verified.recv)).toEndWith("after a retry\n");
  expect(verified.sent).toEqual(exchange.request);
  // The transcript holds the first ClientHello as its hash only: one byte of it changed (the low byte of its first
  // cipher suite, after the record and handshake headers, version, random and session id) breaks the signature.
  const clientToServer = exchange.relayed.clientToServer.slice();
  const suiteByte = 5 + 4 + 2 + 32 + 1 + (clientToServer[5 + 4 + 2 + 32] ?? 0) + 2 + 1;
  clientToServer[suiteByte] = (clientToServer[suiteByte] ?? 0) ^ 0x01;
  expectRefusal(() => verifyRelayedSession({ ...exchange.relayed, clientToServer }, keys, expectations()), "tls_untrusted", /CertificateVerify signature does not verify/);
  // The two ClientHellos must be one client's: the first one's random changed.
  const otherRandom = exchange.relayed.clientToServer.slice();
  otherRandom[5 + 4 + 2] = (otherRandom[5 + 4 + 2] ?? 0) ^ 0x01;
  expectRefusal(() => verifyRelayedSession({ ...exchange.relayed, clientToServer: otherRandom }, keys, expectations()), "transcript_invalid", /second ClientHello has another random than its first/);
  // ... and name the same server.
  const otherName = exchange.relayed.clientToServer.slice();
  otherName[Buffer.from(otherName).indexOf(TARGET_HOST)] = "u".charCodeAt(0);
  expectRefusal(() => verifyRelayedSession({ ...exchange.relayed, clientToServer: otherName }, keys, expectations()), "transcript_invalid", /second ClientHello names another server than its first/);
  // One retry, one suite, one version: the server's bytes changed.
  const server = exchange.relayed.serverToClient;
  const retryLength = 5 + (((server[3] ?? 0) << 8) | (server[4] ?? 0));
  const twoRetries = concatBytes(server.subarray(0, retryLength), server.subarray(0, retryLength), server.subarray(retryLength));
  expectRefusal(() => verifyRelayedSession({ ...exchange.relayed, serverToClient: twoRetries }, keys, expectations()), "transcript_invalid", /second HelloRetryRequest/);
  const otherSuite = server.slice();
  const suiteAt = 5 + 4 + 2 + 32 + 1 + (server[5 + 4 + 2 + 32] ?? 0) + 1;
  otherSuite[suiteAt] = otherSuite[suiteAt] === 1 ? 2 : 1;
  expectRefusal(() => verifyRelayedSession({ ...exchange.relayed, serverToClient: otherSuite }, keys, expectations()), "transcript_invalid", /ServerHello chose another cipher suite than its HelloRetryRequest/);
  const otherVersion = server.slice();
  const versionAt = Buffer.from(otherVersion).indexOf(Buffer.from([0x00, 0x2b, 0x00, 0x02, 0x03, 0x04]), retryLength) + 5;
  otherVersion[versionAt] = 0x03;
  expectRefusal(() => verifyRelayedSession({ ...exchange.relayed, serverToClient: otherVersion }, keys, expectations()), "transcript_invalid", /chose TLS 1\.3 in its HelloRetryRequest and another version in its ServerHello/);
});

describe.each([
  ["a CBC suite", "ECDHE-ECDSA-AES128-SHA"],
  ["RSA key exchange", "AES128-GCM-SHA256"],
])("%s (%s)", (_name, ciphers) => {
  test("is refused by policy", async () => {
    const identity = ciphers.startsWith("ECDHE-ECDSA") ? ids.ecdsa : ids.rsa;
    const t = await startHttpsTarget(identity, { version: "TLSv1.2", ciphers }, "x");
    targets.push(t);
    const exchange = await relayedExchange(t.port, { ca: ids.fixture.caPem, ciphers });
    expectRefusal(() => keysToReveal(exchange.keylog, exchange.relayed, false), "tls_unsupported", /accepts only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305; the server chose cipher suite 0x/);
    const keys: RevealedKeys = { version: "TLS1.2", serverWriteKey: "00".repeat(16), serverWriteIv: "00".repeat(4) };
    expectRefusal(() => verifyRelayedSession(exchange.relayed, keys, expectations()), "tls_unsupported", /accepts only ECDHE/);
  });
});
