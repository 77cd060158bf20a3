import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { concatBytes } from "@noble/hashes/utils.js";
import { ContentType, HandshakeType, handshakeMessage, splitRecords } from "../../src/tls/records.ts";
import { type RelayedBytes, type RevealedKeys, keysToReveal, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { uint16Bytes } from "../../src/tls/wire.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type RecordedExchange, type Target, relayedExchange, startHttpsTarget } from "./support/exchange.ts";
import { verifyIdentities } from "./support/identities.ts";
import { type OpenRecord, type OpenSession, alertRecord, findRecord, openSession, resealed } from "./support/reseal.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * The TLS 1.2 verifier against forgeries of a real session (node:tls client, Bun's HTTPS server): protected records
 * sealed again under the keys the master secret gives, so that they authenticate, and clear records changed.
 */

const ids = verifyIdentities();
/** Long enough for the answer to span several records. */
const ANSWER = "hello from the target\n".repeat(2000);
const targets: Target[] = [];
let exchange: RecordedExchange;
let master: RevealedKeys;
let serverKeys: RevealedKeys;
let session: OpenSession;

beforeAll(async () => {
  const target = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, ANSWER);
  targets.push(target);
  exchange = await relayedExchange(target.port, { ca: ids.fixture.caPem });
  master = keysToReveal(exchange.keylog, exchange.relayed, true);
  serverKeys = keysToReveal(exchange.keylog, exchange.relayed, false);
  session = openSession(exchange.relayed, master);
});
afterAll(async () => {
  await Promise.all(targets.map((t) => t.stop()));
});

const expectations = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });
const verify = (relayed: RelayedBytes, keys = master) => verifyRelayedSession(relayed, keys, expectations());
const forged = (change: (server: OpenRecord[], client: OpenRecord[]) => void) => resealed(session, change);
const closeNotifyAt = (records: OpenRecord[]) => findRecord(records, ContentType.alert);

/** One direction's records as relayed (type and fragment), to be changed in clear and joined again. */
const recordsOf = (bytes: Uint8Array) => splitRecords(bytes, "relayed").records.map(({ type, fragment }) => ({ type, fragment }));
const joined = (records: { type: number; fragment: Uint8Array }[]) => concatBytes(...records.map(({ type, fragment }) => concatBytes(Uint8Array.of(type, 3, 3), uint16Bytes(fragment.length), fragment)));
/** The index of the server's clear handshake record holding a message of `type`. */
const clearRecordOf = (records: { type: number; fragment: Uint8Array }[], type: number) => records.findIndex((r) => r.type === ContentType.handshake && r.fragment[0] === type);

test("the session sealed again unchanged verifies as relayed", () => {
  const again = forged(() => {});
  expect(verify(again).recv).toEqual(exchange.answer);
  expect(verify(again).sent).toEqual(exchange.request);
  expect(verify(again, serverKeys).recv).toEqual(exchange.answer);
});

describe("the Finished messages", () => {
  test("with the master secret: a server or client Finished that does not match, its record authentic", () => {
    const server = forged((records) => (records[0]!.content[15]! ^= 1));
    expectRefusal(() => verify(server), "transcript_invalid", /^the server's Finished does not match the revealed master secret and the handshake$/);
    const client = forged((_server, records) => (records[0]!.content[15]! ^= 1));
    expectRefusal(() => verify(client), "transcript_invalid", /^the client's Finished does not match the revealed master secret and the handshake$/);
  });

  test("a Finished of another length or type is malformed, whatever the keys", () => {
    const short = forged((records) => (records[0]!.content = records[0]!.content.subarray(0, 15)));
    expectRefusal(() => verify(short, serverKeys), "transcript_invalid", /^the server's Finished is malformed$/);
    const otherType = forged((records) => (records[0]!.content[0] = HandshakeType.certificateVerify));
    expectRefusal(() => verify(otherType, serverKeys), "transcript_invalid", /^the server's Finished is malformed$/);
    const client = forged((_server, records) => (records[0]!.content = concatBytes(records[0]!.content, Uint8Array.of(0))));
    expectRefusal(() => verify(client), "transcript_invalid", /^the client's Finished is malformed$/);
  });

  test("a first protected record that is not a handshake record", () => {
    const relayed = forged((records) => (records[0]!.type = ContentType.applicationData));
    expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server's first protected record is not its Finished$/);
  });

  test("the server's bytes ending before its Finished", () => {
    const records = recordsOf(exchange.relayed.serverToClient);
    const ccs = records.findIndex((r) => r.type === ContentType.changeCipherSpec);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(records.slice(0, ccs + 1)) }, serverKeys), "transcript_invalid", /^the server's bytes end before its Finished$/);
  });
});

describe("how each side ends", () => {
  test("a fatal alert where the server's close_notify was", () => {
    const relayed = forged((server) => (server[closeNotifyAt(server)] = alertRecord(0, 2, 80)));
    expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server sent TLS alert 80 \(internal_error\) at level 2: the session did not complete normally$/);
  });

  test("a fatal alert where the client's close_notify was: refused with its key, located without it", () => {
    const relayed = forged((_server, client) => (client[closeNotifyAt(client)] = alertRecord(0, 2, 40)));
    expectRefusal(() => verify(relayed), "transcript_invalid", /^the client sent TLS alert 40 \(handshake_failure\) at level 2/);
    const located = verify(relayed, serverKeys);
    expect(located.clientRecords?.closeNotifyAt).toBe(session.client.records[closeNotifyAt(session.client.records)]!.offset!);
  });

  test("where each side's data and close_notify lay; the request's exact length without its key", () => {
    const { server, client } = session;
    const withKeys = verify(exchange.relayed);
    const dataAt = (records: OpenRecord[]) => records[findRecord(records, ContentType.applicationData)]!.offset!;
    expect(withKeys.serverRecords).toEqual({ dataStart: dataAt(server.records), closeNotifyAt: server.records[closeNotifyAt(server.records)]!.offset! });
    expect(withKeys.clientRecords).toEqual({ dataStart: dataAt(client.records), closeNotifyAt: client.records[closeNotifyAt(client.records)]!.offset! });
    const withoutClientKeys = verify(exchange.relayed, serverKeys);
    expect(withoutClientKeys.clientRecords).toEqual(withKeys.clientRecords);
    expect(withoutClientKeys.sentLength).toBe(exchange.request.length);
    expect(withoutClientKeys.sent).toBeNull();
  });

  test("a record after the client's close_notify", () => {
    const relayed = forged((_server, client) => client.push({ type: ContentType.applicationData, content: Uint8Array.of(1), key: 0 }));
    expectRefusal(() => verify(relayed), "transcript_invalid", /^the client sent records after its close_notify alert$/);
  });

  test("a protected record of a type that is neither data, alert nor handshake", () => {
    const relayed = forged((server) => server.splice(closeNotifyAt(server), 0, { type: ContentType.changeCipherSpec, content: Uint8Array.of(1), key: 0 }));
    expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server sent a record of type 20 after its Finished$/);
  });
});

describe("renegotiation is refused", () => {
  test("a HelloRequest from the server after its Finished, its record authentic", () => {
    const relayed = forged((server) => server.splice(closeNotifyAt(server), 0, { type: ContentType.handshake, content: handshakeMessage(HandshakeType.helloRequest, new Uint8Array(0)), key: 0 }));
    expectRefusal(() => verify(relayed, serverKeys), "tls_unsupported", /^the server started a renegotiation, which proxy mode does not accept$/);
  });

  test("a ClientHello from the client after its Finished, with its key or without", () => {
    const relayed = forged((_server, client) => client.splice(closeNotifyAt(client), 0, { type: ContentType.handshake, content: handshakeMessage(HandshakeType.clientHello, new Uint8Array(40)), key: 0 }));
    expectRefusal(() => verify(relayed), "tls_unsupported", /^the client started a renegotiation, which proxy mode does not accept$/);
    expectRefusal(() => verify(relayed, serverKeys), "tls_unsupported", /^the client started a renegotiation/);
  });
});

describe("the clear handshake", () => {
  test("a server that sends no ServerKeyExchange", () => {
    const records = recordsOf(exchange.relayed.serverToClient);
    records.splice(clearRecordOf(records, HandshakeType.serverKeyExchange), 1);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(records) }, serverKeys), "tls_unsupported", /^the server sent no ServerKeyExchange; proxy mode needs ECDHE$/);
  });

  test("a server that sends no Certificate, or no ServerHelloDone", () => {
    const noCertificate = recordsOf(exchange.relayed.serverToClient);
    noCertificate.splice(clearRecordOf(noCertificate, HandshakeType.certificate), 1);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(noCertificate) }, serverKeys), "transcript_invalid", /^the server sent handshake message type 12 where its Certificate was due$/);
    const noDone = recordsOf(exchange.relayed.serverToClient);
    noDone.splice(clearRecordOf(noDone, HandshakeType.serverHelloDone), 1);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(noDone) }, serverKeys), "transcript_invalid", /^the server sent handshake message type 4 where its ServerHelloDone was due$/);
  });

  test("a handshake message other than a ticket between ServerHelloDone and ChangeCipherSpec", () => {
    const records = recordsOf(exchange.relayed.serverToClient);
    const done = clearRecordOf(records, HandshakeType.serverHelloDone);
    records.splice(done + 1, 0, { ...records[done]! });
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(records) }, serverKeys), "transcript_invalid", /^the server sent handshake message type 14 before its ChangeCipherSpec$/);
  });

  test("a ChangeCipherSpec that cuts a handshake message", () => {
    const records = recordsOf(exchange.relayed.serverToClient);
    const ticket = clearRecordOf(records, HandshakeType.newSessionTicket);
    records[ticket] = { ...records[ticket]!, fragment: records[ticket]!.fragment.subarray(0, 10) };
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(records) }, serverKeys), "transcript_invalid", /^the server's ChangeCipherSpec cuts a handshake message$/);
  });

  test("a client flight with a message a client does not send before its ChangeCipherSpec", () => {
    const records = recordsOf(exchange.relayed.clientToServer);
    const ccs = records.findIndex((r) => r.type === ContentType.changeCipherSpec);
    records.splice(ccs, 0, { type: ContentType.handshake, fragment: handshakeMessage(HandshakeType.serverHelloDone, new Uint8Array(0)) });
    expectRefusal(() => verify({ ...exchange.relayed, clientToServer: joined(records) }, serverKeys), "transcript_invalid", /^the client sent handshake message type 14 before its ChangeCipherSpec$/);
  });

  test("a server that asks for a client certificate: the CertificateRequest and the client's empty Certificate are in both Finished messages", async () => {
    const target = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.2", requestCert: true }, "asked\n");
    targets.push(target);
    const asked = await relayedExchange(target.port, { ca: ids.fixture.caPem });
    expect(clearRecordOf(recordsOf(asked.relayed.serverToClient), HandshakeType.certificateRequest)).toBeGreaterThan(0);
    const verified = verify(asked.relayed, keysToReveal(asked.keylog, asked.relayed, true));
    expect(verified.sent).toEqual(asked.request);
    expect(new TextDecoder().decode(verified.recv)).toEndWith("asked\n");
  });
});

describe("resumption, told by the hellos or by what follows the ServerHello", () => {
  /** A hello record with its session id (after version and random) replaced. */
  const withSessionId = (hello: { type: number; fragment: Uint8Array }, sessionId: Uint8Array) => {
    const body = hello.fragment.subarray(4);
    const rest = body.subarray(35 + body[34]!);
    const newBody = concatBytes(body.subarray(0, 34), Uint8Array.of(sessionId.length), sessionId, rest);
    return { type: hello.type, fragment: concatBytes(Uint8Array.of(hello.fragment[0]!, 0, newBody.length >> 8, newBody.length & 0xff), newBody) };
  };
  const clientSessionId = () => {
    const body = recordsOf(exchange.relayed.clientToServer)[0]!.fragment.subarray(4);
    return body.subarray(35, 35 + body[34]!);
  };

  test("a ServerHello that echoes the client's session id: resumed, whatever follows", () => {
    expect(clientSessionId().length).toBeGreaterThan(0);
    const server = recordsOf(exchange.relayed.serverToClient);
    server[0] = withSessionId(server[0]!, clientSessionId());
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: joined(server) }, serverKeys), "tls_unsupported", /^the server resumed a TLS 1\.2 session; proxy mode needs a full handshake with the server's certificate$/);
  });

  test("no session id on either side is no resumption: the session verifies with the server's keys (its signature covers the randoms, not the ids)", () => {
    const client = recordsOf(exchange.relayed.clientToServer);
    const server = recordsOf(exchange.relayed.serverToClient);
    client[0] = withSessionId(client[0]!, new Uint8Array(0));
    server[0] = withSessionId(server[0]!, new Uint8Array(0));
    expect(verify({ clientToServer: joined(client), serverToClient: joined(server) }, serverKeys).recv).toEqual(exchange.answer);
  });

  test("a ChangeCipherSpec, a NewSessionTicket or a Finished right after the ServerHello", () => {
    const records = recordsOf(exchange.relayed.serverToClient);
    const withoutFlight = (keep: (record: { type: number; fragment: Uint8Array }) => boolean) => joined(records.filter((record, i) => i === 0 || record.type !== ContentType.handshake || keep(record)));
    const ccs = withoutFlight(() => false);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: ccs }, serverKeys), "tls_unsupported", /^the server resumed a TLS 1\.2 session/);
    const ticket = withoutFlight((record) => record.fragment[0] === HandshakeType.newSessionTicket);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: ticket }, serverKeys), "tls_unsupported", /^the server resumed a TLS 1\.2 session/);
    const finished = joined([records[0]!, { type: ContentType.handshake, fragment: handshakeMessage(HandshakeType.finished, new Uint8Array(12)) }, ...records.slice(1)]);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: finished }, serverKeys), "tls_unsupported", /^the server resumed a TLS 1\.2 session/);
  });
});

describe("the server's clear flight cut short", () => {
  test.each([
    ["after its ServerHello", HandshakeType.serverHello, "Certificate"],
    ["after its Certificate", HandshakeType.certificate, "ServerKeyExchange"],
    ["after its ServerKeyExchange", HandshakeType.serverKeyExchange, "ServerHelloDone"],
    ["after its ServerHelloDone", HandshakeType.serverHelloDone, "ChangeCipherSpec"],
  ] as const)("%s", (_name, last, expecting) => {
    const records = recordsOf(exchange.relayed.serverToClient);
    const cut = joined(records.slice(0, clearRecordOf(records, last) + 1));
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: cut }, serverKeys), "transcript_invalid", new RegExp(`^the server's bytes end before its ${expecting}$`));
  });

  test("after a CertificateRequest", async () => {
    const target = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.2", requestCert: true }, "asked\n");
    targets.push(target);
    const asked = await relayedExchange(target.port, { ca: ids.fixture.caPem });
    const records = recordsOf(asked.relayed.serverToClient);
    const cut = joined(records.slice(0, clearRecordOf(records, HandshakeType.certificateRequest) + 1));
    expectRefusal(() => verify({ ...asked.relayed, serverToClient: cut }, keysToReveal(asked.keylog, asked.relayed, false)), "transcript_invalid", /^the server's bytes end before its ServerHelloDone$/);
  });
});

test("a ServerKeyExchange whose signature does not cover the randoms as sent, named", () => {
  const server = exchange.relayed.serverToClient.slice();
  server[5 + 4 + 2 + 3]! ^= 1;
  expectRefusal(() => verify({ ...exchange.relayed, serverToClient: server }, serverKeys), "tls_untrusted", /^the server's ServerKeyExchange signature does not verify with its certificate's key$/);
});

test("a client record changed, with the master secret: named by its key", () => {
  const { client } = session;
  const data = client.records[findRecord(client.records, ContentType.applicationData)]!;
  const changed = exchange.relayed.clientToServer.slice();
  changed[data.offset! + 20]! ^= 1;
  expectRefusal(() => verify({ ...exchange.relayed, clientToServer: changed }), "transcript_invalid", /^the client's protected record 1 does not authenticate under the revealed client write key: /);
});

test("a server that sends no close_notify: none is located", () => {
  const relayed = forged((server) => void server.splice(closeNotifyAt(server), 1));
  const verified = verify(relayed, serverKeys);
  expect(verified.recv).toEqual(exchange.answer);
  expect(verified.serverRecords.closeNotifyAt).toBeNull();
  const noData = forged((server) => void server.splice(1));
  expect(verify(noData, serverKeys).serverRecords).toEqual({ dataStart: null, closeNotifyAt: null });
});

test("an empty application data record opens to nothing (TLS 1.2 allows them)", () => {
  const relayed = forged((server) => server.splice(findRecord(server, ContentType.applicationData), 0, { type: ContentType.applicationData, content: new Uint8Array(0), key: 0 }));
  expect(verify(relayed, serverKeys).recv).toEqual(exchange.answer);
});
