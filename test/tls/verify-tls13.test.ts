import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sign } from "node:crypto";
import { concatBytes, hexToBytes } from "@noble/hashes/utils.js";
import { digest, finishedVerifyData } from "../../src/tls/key-schedule.ts";
import { ContentType, HandshakeAssembler, HandshakeType, handshakeMessage, splitRecords } from "../../src/tls/records.ts";
import { readHellos } from "../../src/tls/session-start.ts";
import { vectorBytes } from "../../src/tls/wire.ts";
import { type RelayedBytes, type RevealedKeys, keysToReveal, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type RecordedExchange, type Target, relayedExchange, startHttpsTarget } from "./support/exchange.ts";
import { verifyIdentities } from "./support/identities.ts";
import { type OpenRecord, type OpenSession, alertRecord, findRecord, keyUpdateRecord, openSession, resealed } from "./support/reseal.ts";
import { expectRefusal } from "./support/refusal.ts";

/**
 * The TLS 1.3 verifier against forgeries a prover holding every key could make of a real session (node:tls client,
 * Bun's HTTPS server): each forged record authenticates, so only the check under test can refuse it.
 */

const ids = verifyIdentities();
/** Long enough for the answer to span several records. */
const ANSWER = "hello from the target\n".repeat(2000);
let target: Target;
let exchange: RecordedExchange;
let allKeys: RevealedKeys;
let serverKeys: RevealedKeys;
let session: OpenSession;

beforeAll(async () => {
  target = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.3" }, ANSWER);
  exchange = await relayedExchange(target.port, { ca: ids.fixture.caPem });
  allKeys = keysToReveal(exchange.keylog, exchange.relayed, true);
  serverKeys = keysToReveal(exchange.keylog, exchange.relayed, false);
  session = openSession(exchange.relayed, allKeys);
});
afterAll(() => target.stop());

const expectations = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });
const verify = (relayed: RelayedBytes, keys = allKeys) => verifyRelayedSession(relayed, keys, expectations());
const forged = (change: (server: OpenRecord[], client: OpenRecord[]) => void) => resealed(session, change);

/** The last record under the handshake key: it ends with the Finished, whose verify_data ends the record. */
const lastHandshakeRecord = (records: OpenRecord[]): OpenRecord => records.filter((record) => record.key === 0).at(-1)!;
const flipLastByte = (record: OpenRecord): void => {
  record.content[record.content.length - 1]! ^= 1;
};
/** The server's application records: tickets, data, then its close_notify. */
const firstDataAt = (server: OpenRecord[]) => findRecord(server, ContentType.applicationData);
const closeNotifyAt = (records: OpenRecord[]) => findRecord(records, ContentType.alert);

test("the session sealed again unchanged verifies as relayed: the forgeries below differ from it only in what they change", () => {
  const again = forged(() => {});
  expect(verify(again).recv).toEqual(exchange.answer);
  expect(verify(again).sent).toEqual(exchange.request);
  expect(verify(again, serverKeys).recv).toEqual(exchange.answer);
});

describe("the Finished messages", () => {
  test("a server Finished that does not match the transcript, its record authentic", () => {
    const relayed = forged((server) => flipLastByte(lastHandshakeRecord(server)));
    expectRefusal(() => verify(relayed, serverKeys), "tls_untrusted", /^the server's Finished does not match the handshake transcript$/);
  });

  test("a client Finished that does not match, its record authentic", () => {
    const relayed = forged((_server, client) => flipLastByte(lastHandshakeRecord(client)));
    expectRefusal(() => verify(relayed), "transcript_invalid", /^the client's Finished does not match the revealed client handshake traffic secret$/);
    // Without the client's keys, its flight is not read.
    expect(verify(relayed, serverKeys).recv).toEqual(exchange.answer);
  });

  test("a Finished followed by more in its record", () => {
    const ticket = handshakeMessage(HandshakeType.newSessionTicket, new Uint8Array(12));
    const server = forged((records) => {
      const record = lastHandshakeRecord(records);
      record.content = concatBytes(record.content, ticket);
    });
    expectRefusal(() => verify(server, serverKeys), "transcript_invalid", /^the server's Finished does not end its record$/);
    const client = forged((_server, records) => {
      const record = lastHandshakeRecord(records);
      record.content = concatBytes(record.content, ticket);
    });
    expectRefusal(() => verify(client), "transcript_invalid", /^the client's Finished does not end its record$/);
  });

  test("a client flight with a message that is neither certificate, CertificateVerify nor Finished", () => {
    const relayed = forged((_server, client) => {
      const record = lastHandshakeRecord(client);
      record.content = concatBytes(handshakeMessage(HandshakeType.encryptedExtensions, Uint8Array.of(0, 0)), record.content);
    });
    expectRefusal(() => verify(relayed), "transcript_invalid", /^the client sent handshake message type 8 before its Finished$/);
  });

  test("data or an alert inside the server's handshake flight", () => {
    const data = forged((server) => server.splice(0, 0, { type: ContentType.applicationData, content: Uint8Array.of(1), key: 0 }));
    expectRefusal(() => verify(data, serverKeys), "transcript_invalid", /^the server sent data of type 23 before its Finished$/);
    const alert = forged((server) => server.splice(0, 0, alertRecord(0, 2, 40)));
    expectRefusal(() => verify(alert, serverKeys), "transcript_invalid", /^the server sent TLS alert 40 \(handshake_failure\) at level 2: the session did not complete normally$/);
  });
});

describe("how the server ends", () => {
  test("a fatal alert where the close_notify was: the session did not complete normally", () => {
    const relayed = forged((server) => (server[closeNotifyAt(server)] = alertRecord(1, 2, 80)));
    expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server sent TLS alert 80 \(internal_error\) at level 2: the session did not complete normally$/);
  });

  test("a warning that is not close_notify, an unnamed alert, and a malformed one", () => {
    const warning = forged((server) => (server[closeNotifyAt(server)] = alertRecord(1, 1, 90)));
    expectRefusal(() => verify(warning, serverKeys), "transcript_invalid", /alert 90 \(user_canceled\) at level 1/);
    const unnamed = forged((server) => (server[closeNotifyAt(server)] = alertRecord(1, 2, 200)));
    expectRefusal(() => verify(unnamed, serverKeys), "transcript_invalid", /sent TLS alert 200 at level 2:/);
    const long = forged((server) => (server[closeNotifyAt(server)] = { type: ContentType.alert, content: Uint8Array.of(1, 0, 0), key: 1 }));
    expectRefusal(() => verify(long, serverKeys), "transcript_invalid", /^the server sent a malformed alert$/);
  });

  test("no close_notify at all: the answer is what the data records hold, and no close is recorded", () => {
    const relayed = forged((server) => void server.splice(closeNotifyAt(server), 1));
    const verified = verify(relayed, serverKeys);
    expect(verified.recv).toEqual(exchange.answer);
    expect(verified.serverRecords.closeNotifyAt).toBeNull();
  });

  test("where the data and the close_notify lay, in the relayed bytes", () => {
    const verified = verify(exchange.relayed);
    const { server, client } = session;
    expect(server.records.filter((record) => record.type === ContentType.applicationData).length).toBeGreaterThan(1);
    expect(verified.serverRecords).toEqual({ dataStart: server.records[firstDataAt(server.records)]!.offset!, closeNotifyAt: server.records[closeNotifyAt(server.records)]!.offset! });
    expect(verified.clientRecords).toEqual({
      dataStart: client.records[findRecord(client.records, ContentType.applicationData)]!.offset!,
      closeNotifyAt: client.records[closeNotifyAt(client.records)]!.offset!,
    });
  });

  test("protected content of an unknown type, and a clear record after the handshake", () => {
    const unknown = forged((server) => server.splice(firstDataAt(server), 0, { type: 24, content: Uint8Array.of(1), key: 1 }));
    expectRefusal(() => verify(unknown, serverKeys), "transcript_invalid", /^the server sent protected content of type 24$/);
    const unclosed = forged((server) => void server.splice(closeNotifyAt(server), 1));
    const clear = concatBytes(unclosed.serverToClient, Uint8Array.of(ContentType.handshake, 3, 3, 0, 1, 0));
    expectRefusal(() => verify({ ...unclosed, serverToClient: clear }, serverKeys), "transcript_invalid", /^the server sent a clear record of type 22 after the handshake$/);
  });
});

describe("post-handshake messages", () => {
  test("a KeyUpdate: the records after it open under the next secret, the answer is whole", () => {
    for (const body of [0, 1]) {
      const relayed = forged((server) => {
        const at = firstDataAt(server);
        server.splice(at, 0, keyUpdateRecord(1, body));
        for (const record of server.slice(at + 1)) record.key = 2;
      });
      expect(verify(relayed, serverKeys).recv).toEqual(exchange.answer);
    }
  });

  test("two KeyUpdates, and records still under the first secret after one", () => {
    const twice = forged((server) => {
      const at = firstDataAt(server);
      server.splice(at, 0, keyUpdateRecord(1, 0), keyUpdateRecord(2, 0));
      for (const record of server.slice(at + 2)) record.key = 3;
    });
    expect(verify(twice, serverKeys).recv).toEqual(exchange.answer);
    const stale = forged((server) => server.splice(firstDataAt(server), 0, keyUpdateRecord(1, 0), keyUpdateRecord(2, 0)));
    expectRefusal(
      () => verify(stale, serverKeys),
      "transcript_invalid",
      /^the server's protected record 0 does not authenticate under the revealed server application traffic secret after 2 key updates: the key is wrong or the relayed bytes were changed$/,
    );
  });

  test("a KeyUpdate with another body, or not ending its record", () => {
    for (const content of [handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(2)), handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(0, 0))]) {
      const relayed = forged((server) => server.splice(firstDataAt(server), 0, { type: ContentType.handshake, content, key: 1 }));
      expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server's KeyUpdate is malformed or does not end its record$/);
    }
    const split = forged((server) => {
      const keyUpdate = handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(0));
      server.splice(firstDataAt(server), 0, { type: ContentType.handshake, content: concatBytes(keyUpdate, keyUpdate.subarray(0, 2)), key: 1 });
    });
    expectRefusal(() => verify(split, serverKeys), "transcript_invalid", /KeyUpdate is malformed or does not end its record/);
  });

  test("a message split over two records is read whole", () => {
    const relayed = forged((server) => {
      const at = findRecord(server, ContentType.handshake, HandshakeType.newSessionTicket);
      const ticket = server[at]!;
      server.splice(at, 1, { ...ticket, content: ticket.content.subarray(0, 3) }, { ...ticket, content: ticket.content.subarray(3) });
    });
    expect(verify(relayed, serverKeys).recv).toEqual(exchange.answer);
  });

  test("a post-handshake message other than a ticket from the server; a ticket from the client", () => {
    const request = forged((server) => server.splice(firstDataAt(server), 0, { type: ContentType.handshake, content: handshakeMessage(HandshakeType.certificateRequest, Uint8Array.of(0, 0, 0)), key: 1 }));
    expectRefusal(() => verify(request, serverKeys), "tls_unsupported", /^the server sent post-handshake message type 13, which proxy mode does not accept$/);
    const ticket = session.server.records[findRecord(session.server.records, ContentType.handshake, HandshakeType.newSessionTicket)]!;
    const client = forged((_server, records) => records.splice(findRecord(records, ContentType.applicationData), 0, { ...ticket }));
    expectRefusal(() => verify(client), "tls_unsupported", /^the client sent post-handshake message type 4, which proxy mode does not accept$/);
  });

  test("a protected record with no content type (only padding)", () => {
    const relayed = forged((server) => server.splice(firstDataAt(server), 0, { type: 0, content: new Uint8Array(3), key: 1 }));
    expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server's protected record \d+ has no content type$/);
  });
});

describe("the records around the handshake", () => {
  test("records swapped or repeated as relayed do not authenticate: each key's sequence number counts from 0", () => {
    const { records } = splitRecords(exchange.relayed.serverToClient, "server");
    const data = session.server.records.filter((record) => record.type === ContentType.applicationData).map((record) => records.findIndex((r) => r.offset === record.offset));
    const bytesOf = (order: number[]) => concatBytes(...order.map((i) => exchange.relayed.serverToClient.subarray(records[i]!.offset, records[i]!.offset + 5 + records[i]!.fragment.length)));
    const all = records.map((_, i) => i);
    const [first, second] = [data[0]!, data[1]!];
    const swapped = all.map((i) => (i === first ? second : i === second ? first : i));
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: bytesOf(swapped) }, serverKeys), "transcript_invalid", /^the server's protected record \d+ does not authenticate under the revealed server application traffic secret: /);
    const repeated = all.flatMap((i) => (i === first ? [i, i] : [i]));
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: bytesOf(repeated) }, serverKeys), "transcript_invalid", /^the server's protected record \d+ does not authenticate/);
  });

  test("a ChangeCipherSpec is skipped before the flight, refused once a protected record came", () => {
    const { clear } = session.server;
    // The flight split over two records, a ChangeCipherSpec between them.
    const split = forged((server) => {
      const flight = server[0]!;
      server.splice(0, 1, { ...flight, content: flight.content.subarray(0, 100) }, { ...flight, content: flight.content.subarray(100) });
    });
    const firstRecordEnd = clear.length + 5 + 100 + 1 + 16;
    const ccs = Uint8Array.of(ContentType.changeCipherSpec, 3, 3, 0, 1, 1);
    expect(verify(split, serverKeys).recv).toEqual(exchange.answer);
    const inFlight = concatBytes(split.serverToClient.subarray(0, firstRecordEnd), ccs, split.serverToClient.subarray(firstRecordEnd));
    expectRefusal(() => verify({ ...split, serverToClient: inFlight }, serverKeys), "transcript_invalid", /^the server sent a clear record of type 20 after its hello$/);
    expect(clear.subarray(-6)).toEqual(ccs);
    const malformedCcs = concatBytes(clear.subarray(0, clear.length - 6), Uint8Array.of(ContentType.changeCipherSpec, 3, 3, 0, 1, 2), split.serverToClient.subarray(clear.length));
    expectRefusal(() => verify({ ...split, serverToClient: malformedCcs }, serverKeys), "transcript_invalid", /^the server sent a malformed ChangeCipherSpec$/);
  });

  test("the server's bytes ending inside its flight", () => {
    const cut = { ...exchange.relayed, serverToClient: concatBytes(session.server.clear) };
    expectRefusal(() => verify(cut, serverKeys), "transcript_invalid", /^the server's bytes end before its EncryptedExtensions$/);
  });
});

test("a server that asks for a client certificate: its CertificateRequest and the client's empty Certificate are in the transcripts", async () => {
  const asking = await startHttpsTarget(ids.ecdsa, { version: "TLSv1.3", requestCert: true }, "asked\n");
  try {
    const asked = await relayedExchange(asking.port, { ca: ids.fixture.caPem });
    const verified = verify(asked.relayed, keysToReveal(asked.keylog, asked.relayed, true));
    expect(verified.sent).toEqual(asked.request);
    expect(new TextDecoder().decode(verified.recv)).toEndWith("asked\n");
    // The client's flight holds its Certificate before its Finished.
    const opened = openSession(asked.relayed, keysToReveal(asked.keylog, asked.relayed, true));
    expect(opened.client.records[0]?.content[0]).toBe(HandshakeType.certificate);
  } finally {
    await asking.stop();
  }
});

describe("the client's side without its keys", () => {
  test("counted from record sizes after its flight; a clear record after its hello is refused", () => {
    const { clientToServer } = exchange.relayed;
    const tiny = Uint8Array.of(ContentType.applicationData, 3, 3, 0, 10, ...new Uint8Array(10));
    expect(verify({ ...exchange.relayed, clientToServer: concatBytes(clientToServer, tiny) }, serverKeys).sentLength).toBe(verify(exchange.relayed, serverKeys).sentLength);
    const data = Uint8Array.of(ContentType.applicationData, 3, 3, 0, 30, ...new Uint8Array(30));
    expect(verify({ ...exchange.relayed, clientToServer: concatBytes(clientToServer, data) }, serverKeys).sentLength).toBe(verify(exchange.relayed, serverKeys).sentLength + 30 - 16 - 1);
    const clear = Uint8Array.of(ContentType.handshake, 3, 3, 0, 1, 0);
    expectRefusal(() => verify({ ...exchange.relayed, clientToServer: concatBytes(clientToServer, clear) }, serverKeys), "transcript_invalid", /^the client sent a clear record of type 22 after its hello$/);
    const lateCcs = Uint8Array.of(ContentType.changeCipherSpec, 3, 3, 0, 1, 1);
    expectRefusal(() => verify({ ...exchange.relayed, clientToServer: concatBytes(clientToServer, lateCcs) }, serverKeys), "transcript_invalid", /^the client sent a clear record of type 20 after its hello$/);
  });
});

test("a ServerHello that does not end its record", () => {
  const { serverToClient } = exchange.relayed;
  const first = splitRecords(serverToClient, "server").records[0]!;
  const extra = Uint8Array.of(HandshakeType.encryptedExtensions, 0, 0, 2);
  const fragment = concatBytes(first.fragment, extra);
  const relayed = { ...exchange.relayed, serverToClient: concatBytes(Uint8Array.of(22, 3, 3, fragment.length >> 8, fragment.length & 0xff), fragment, serverToClient.subarray(5 + first.fragment.length)) };
  expectRefusal(() => verify(relayed, serverKeys), "transcript_invalid", /^the server's ServerHello does not end its record$/);
});

describe("which key failed, named", () => {
  const flipRecordByte = (bytes: Uint8Array, offset: number) => {
    const out = bytes.slice();
    out[offset + 10]! ^= 1;
    return out;
  };

  test("a server handshake record, a client handshake record, a client application record changed", () => {
    const serverFlight = flipRecordByte(exchange.relayed.serverToClient, session.server.records[0]!.offset!);
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: serverFlight }), "transcript_invalid", /^the server's protected record 0 does not authenticate under the revealed server handshake traffic secret: the key is wrong or the relayed bytes were changed$/);
    const clientFlight = flipRecordByte(exchange.relayed.clientToServer, session.client.records[0]!.offset!);
    expectRefusal(() => verify({ ...exchange.relayed, clientToServer: clientFlight }), "transcript_invalid", /^the client's protected record 0 does not authenticate under the revealed client handshake traffic secret: /);
    const clientData = flipRecordByte(exchange.relayed.clientToServer, session.client.records[1]!.offset!);
    expectRefusal(() => verify({ ...exchange.relayed, clientToServer: clientData }), "transcript_invalid", /^the client's protected record 0 does not authenticate under the revealed client application traffic secret: /);
  });

  test("the client's bytes ending before its Finished", () => {
    const cut = exchange.relayed.clientToServer.subarray(0, session.client.records[0]!.offset!);
    expectRefusal(() => verify({ ...exchange.relayed, clientToServer: cut }), "transcript_invalid", /^the client's bytes end before its Finished$/);
  });

  test("a clear alert where the server's flight was due", () => {
    const { clear } = session.server;
    const alerted = concatBytes(clear, Uint8Array.of(ContentType.alert, 3, 3, 0, 2, 2, 40));
    expectRefusal(() => verify({ ...exchange.relayed, serverToClient: alerted }, serverKeys), "transcript_invalid", /^the server sent TLS alert 40 \(handshake_failure\) at level 2: the session did not complete normally$/);
  });
});

test("a client flight with a Certificate and a CertificateVerify before its Finished, which covers them", () => {
  const start = readHellos(exchange.relayed);
  const flight = new HandshakeAssembler();
  flight.push(lastHandshakeRecord(session.server.records).content);
  const serverMessages: Uint8Array[] = [];
  for (let message = flight.next(); message; message = flight.next()) serverMessages.push(message.raw);
  const certificate = handshakeMessage(HandshakeType.certificate, Uint8Array.of(0, 0, 0, 0));
  const certificateVerify = handshakeMessage(HandshakeType.certificateVerify, Uint8Array.of(4, 3, 0, 1, 0));
  const clientSecret = hexToBytes((allKeys as { clientHandshakeTrafficSecret: string }).clientHandshakeTrafficSecret);
  const finished = handshakeMessage(HandshakeType.finished, finishedVerifyData(start.suite.hash, clientSecret, digest(start.suite.hash, ...start.transcript, ...serverMessages, certificate, certificateVerify)));
  const relayed = forged((_server, client) => (client[0]!.content = concatBytes(certificate, certificateVerify, finished)));
  expect(verify(relayed).sent).toEqual(exchange.request);
});

describe("the server's flight, message by message, its records authentic", () => {
  const start = () => readHellos(exchange.relayed);
  /** The flight's messages: EncryptedExtensions, Certificate, CertificateVerify, Finished. */
  const flightMessages = (): Uint8Array[] => {
    const assembler = new HandshakeAssembler();
    assembler.push(lastHandshakeRecord(session.server.records).content);
    const messages: Uint8Array[] = [];
    for (let message = assembler.next(); message; message = assembler.next()) messages.push(message.raw);
    expect(messages.map((m) => m[0])).toEqual([HandshakeType.encryptedExtensions, HandshakeType.certificate, HandshakeType.certificateVerify, HandshakeType.finished]);
    return messages;
  };
  /** The session whose server flight is `messages` in one record; with `alone`, nothing follows it. */
  const withFlight = (messages: Uint8Array[], alone = false) =>
    forged((server) => {
      server[0]!.content = concatBytes(...messages);
      if (alone) server.splice(1);
    });
  const serverSecret = () => hexToBytes((serverKeys as { serverHandshakeTrafficSecret: string }).serverHandshakeTrafficSecret);

  test("a flight that stops after each message", () => {
    const [ee, certificate, certificateVerify] = flightMessages();
    expectRefusal(() => verify(withFlight([ee!], true), serverKeys), "transcript_invalid", /^the server's bytes end before its Certificate$/);
    expectRefusal(() => verify(withFlight([ee!, certificate!], true), serverKeys), "transcript_invalid", /^the server's bytes end before its CertificateVerify$/);
    expectRefusal(() => verify(withFlight([ee!, certificate!, certificateVerify!], true), serverKeys), "transcript_invalid", /^the server's bytes end before its Finished$/);
    const request = handshakeMessage(HandshakeType.certificateRequest, concatBytes(Uint8Array.of(0), Uint8Array.of(0, 0)));
    expectRefusal(() => verify(withFlight([ee!, request], true), serverKeys), "transcript_invalid", /^the server's bytes end before its Certificate$/);
  });

  test("a message missing or out of its place", () => {
    const [ee, certificate, certificateVerify, finished] = flightMessages();
    expectRefusal(() => verify(withFlight([certificate!, certificateVerify!, finished!]), serverKeys), "transcript_invalid", /^the server sent handshake message type 11 where its EncryptedExtensions was due$/);
    expectRefusal(() => verify(withFlight([ee!, certificateVerify!, finished!]), serverKeys), "transcript_invalid", /^the server sent handshake message type 15 where its Certificate was due$/);
    expectRefusal(() => verify(withFlight([ee!, certificate!, finished!]), serverKeys), "transcript_invalid", /^the server sent handshake message type 20 where its CertificateVerify was due$/);
    expectRefusal(() => verify(withFlight([ee!, certificate!, certificateVerify!, certificateVerify!]), serverKeys), "transcript_invalid", /^the server sent handshake message type 15 where its Finished was due$/);
    expectRefusal(() => verify(withFlight([ee!, finished!]), serverKeys), "tls_unsupported", /^the server sent no certificate; proxy mode needs one$/);
  });

  test("a CertificateVerify signed under a scheme TLS 1.3 binds to another curve, its Finished recomputed: refused", () => {
    const [ee, certificate] = flightMessages();
    const { suite, transcript } = start();
    const signed = concatBytes(new Uint8Array(64).fill(0x20), new TextEncoder().encode("TLS 1.3, server CertificateVerify"), Uint8Array.of(0), digest(suite.hash, ...transcript, ee!, certificate!));
    const resign = (scheme: number, hash: string) => {
      const signature = new Uint8Array(sign(hash, signed, ids.ecdsa.leafKeyPem));
      const certificateVerify = handshakeMessage(HandshakeType.certificateVerify, concatBytes(Uint8Array.of(scheme >> 8, scheme & 0xff), vectorBytes(2, signature)));
      const finished = handshakeMessage(HandshakeType.finished, finishedVerifyData(suite.hash, serverSecret(), digest(suite.hash, ...transcript, ee!, certificate!, certificateVerify)));
      return withFlight([ee!, certificate!, certificateVerify, finished]);
    };
    // The honest scheme, signed again: the flight verifies, so the refusal below is the curve's.
    expect(verify(resign(0x0403, "sha256"), serverKeys).recv).toEqual(exchange.answer);
    expectRefusal(() => verify(resign(0x0503, "sha384"), serverKeys), "tls_untrusted", /^the server's CertificateVerify signature scheme 0x0503 does not fit its certificate's curve$/);
  });
});
