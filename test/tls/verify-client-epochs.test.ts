import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:https";
import type { ErrorCode } from "../../src/core/errors.ts";
import { partlyRevealedDirection, revealedRequestProblem } from "../../src/proof/request-rule.ts";
import { RecordSealer } from "../../src/tls/record-protection.ts";
import { concatBytes } from "@noble/hashes/utils.js";
import type { TrafficKeys } from "../../src/tls/key-schedule.ts";
import { ContentType, HandshakeType, handshakeMessage, splitRecords } from "../../src/tls/records.ts";
import { readHellos } from "../../src/tls/session-start.ts";
import type { RequestPart } from "../../src/tls/client/exchange.ts";
import { type RelayedBytes, type RevealedKeys, keysOfEpochExchange, verifyRelayedSession } from "../../src/tls/verify-session.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";
import { type RecordedExchange, recordedExchange } from "./client/support.ts";
import { verifyIdentities } from "./support/identities.ts";
import { expectRefusal as expectAppError } from "./support/refusal.ts";
import { type OpenRecord, openDirection, sealDirection } from "./support/reseal.ts";

/**
 * The notary's check of a request written in epochs, on a real session (our client, Bun's HTTPS server): what an
 * honest layout shows, and the forgeries it refuses: keys that do not authenticate the recorded records, layouts
 * whose epoch boundaries do not match the records.
 */

const ids = verifyIdentities();
const encoder = new TextEncoder();
let stop: () => Promise<void>;
let port = 0;

beforeAll(async () => {
  const server = createServer({ key: ids.ecdsa.leafKeyPem, cert: ids.ecdsa.chainPem, minVersion: "TLSv1.3" }, (_request, response) => response.end("fine\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  port = typeof address === "object" && address ? address.port : 0;
  stop = () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())));
});
afterAll(() => stop());

const TOKEN = "Bearer tok_abcdefghijklmnop";
const COOKIE = "session=s3cr3t-cookie-value";
/** Revealed, hidden, revealed, hidden, revealed: epochs R H R H R. */
const request = (): RequestPart[] => [
  { bytes: encoder.encode(`GET /a HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nAuthorization: `), hidden: false },
  { bytes: encoder.encode(TOKEN), hidden: true },
  { bytes: encoder.encode("\r\nCookie: "), hidden: false },
  { bytes: encoder.encode(COOKIE), hidden: true },
  { bytes: encoder.encode("\r\nConnection: close\r\n\r\n"), hidden: false },
];

const options = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], responseTimeoutMs: 20_000, maxRecvBytes: 1 << 20 });
const expectations = () => ({ serverName: TARGET_HOST, trustAnchorsPem: [ids.fixture.caPem], now: new Date() });
type Epochs = NonNullable<Extract<RevealedKeys, { version: "TLS1.3" }>["clientEpochs"]>;

let session: RecordedExchange;
let keys: Extract<RevealedKeys, { version: "TLS1.3" }>;
beforeAll(async () => {
  session = await recordedExchange(port, request(), options());
  keys = keysOfEpochExchange(session) as typeof keys;
});

/** The keys with the client epochs replaced. */
const withEpochs = (change: (epochs: Epochs) => Epochs): RevealedKeys => ({ ...keys, clientEpochs: change(structuredClone(keys.clientEpochs!)) });

function expectRefusal(revealed: RevealedKeys, code: ErrorCode, message: RegExp, relayed = session.relayed): void {
  expectAppError(() => verifyRelayedSession(relayed, revealed, expectations()), code, message);
}

const flipHex = (hex: string): string => ((Number.parseInt(hex.slice(0, 2), 16) ^ 1).toString(16).padStart(2, "0")) + hex.slice(2);

test("an honest layout: the request with its two hidden values as spans of their exact lengths", () => {
  const verified = verifyRelayedSession(session.relayed, keys, expectations());
  const text = new TextDecoder().decode(session.sent);
  const tokenAt = text.indexOf(TOKEN);
  const cookieAt = text.indexOf(COOKIE);
  expect(verified.sentPartly?.hidden).toEqual([
    { start: tokenAt, end: tokenAt + TOKEN.length },
    { start: cookieAt, end: cookieAt + COOKIE.length },
  ]);
  expect(new TextDecoder().decode(verified.sentPartly?.bytes)).toBe(text.replace(TOKEN, "\0".repeat(TOKEN.length)).replace(COOKIE, "\0".repeat(COOKIE.length)));
  expect(verified.sentLength).toBe(session.sent.length);
});

test("a revealed epoch's key or IV with one byte changed does not authenticate its records", () => {
  expectRefusal(withEpochs((e) => (e[2]!.key = flipHex(e[2]!.key!), e)), "transcript_invalid", /client epoch 2's revealed key does not authenticate the record the layout starts it at/);
  expectRefusal(withEpochs((e) => (e[0]!.iv = flipHex(e[0]!.iv!), e)), "transcript_invalid", /client epoch 0's revealed key does not authenticate/);
});

test("revealed keys swapped between epochs, or taken from another session", async () => {
  expectRefusal(withEpochs((e) => ([e[0]!.key, e[2]!.key] = [e[2]!.key, e[0]!.key], e)), "transcript_invalid", /client epoch 0's revealed key does not authenticate/);
  const other = keysOfEpochExchange(await recordedExchange(port, request(), options())) as typeof keys;
  expectRefusal({ ...keys, clientEpochs: other.clientEpochs }, "transcript_invalid", /client epoch 0's revealed key does not authenticate/);
});

test("a hidden epoch given keys of its own: none opens its records", () => {
  expectRefusal(withEpochs((e) => ((e[1] = { ...e[1]!, key: e[0]!.key, iv: e[0]!.iv }), e)), "transcript_invalid", /client epoch 1's revealed key does not authenticate/);
});

test.each([
  ["a hidden epoch one record longer", 1, 1, /client epoch 2's revealed key does not authenticate the record the layout starts it at/],
  ["a hidden epoch one record shorter", 3, -1, /hidden client epoch 3 has 1 records; it needs data and its KeyUpdate/],
  ["a revealed epoch one record longer", 0, 1, /client epoch 0 holds a KeyUpdate where the layout does not end it/],
  ["a revealed epoch one record shorter", 2, -1, /client epoch 2's last record holds content of type 23, not its KeyUpdate/],
] as const)("epoch boundaries that do not match the records: %s", (_name, epoch, delta, message) => {
  expectRefusal(withEpochs((e) => ((e[epoch]!.records += delta), e)), "transcript_invalid", message);
});

test("a layout with fewer epochs than the records hold, or more", () => {
  expectRefusal(withEpochs((e) => e.slice(0, 3)), "transcript_invalid", /client epoch 2 holds a KeyUpdate where the layout does not end it/);
  expectRefusal(withEpochs((e) => [...e, { records: 1, key: e[4]!.key, iv: e[4]!.iv }]), "transcript_invalid", /client epoch 4's last record holds content of type 21, not its KeyUpdate/);
});

test("a layout that ends in a hidden epoch is refused: nothing would bound it", () => {
  expectRefusal(withEpochs((e) => ((e[4] = { records: e[4]!.records }), e)), "transcript_invalid", /the last client epoch is hidden/);
});

test("a revealed epoch withheld makes the hidden spans around it one span", () => {
  const verified = verifyRelayedSession(session.relayed, withEpochs((e) => ((e[2] = { records: e[2]!.records }), e)), expectations());
  const text = new TextDecoder().decode(session.sent);
  expect(verified.sentPartly?.hidden).toEqual([{ start: text.indexOf(TOKEN), end: text.indexOf(COOKIE) + COOKIE.length }]);
});

test("a relayed byte of a revealed epoch changed", () => {
  const clientToServer = session.relayed.clientToServer.slice();
  // The last record is the client's close_notify in the final revealed epoch.
  clientToServer[clientToServer.length - 3] = (clientToServer[clientToServer.length - 3] ?? 0) ^ 1;
  expectRefusal(keys, "transcript_invalid", /client epoch 4's record \d+ does not authenticate under its revealed key/, { ...session.relayed, clientToServer });
});

/** The session with epoch 0's last record (its KeyUpdate) replaced by one of `type` holding `content`, sealed under epoch 0's own key. */
function withEpochZeroEnding(type: number, content: Uint8Array): RelayedBytes {
  const epoch = session.clientEpochs[0]!;
  if (!epoch.revealed) throw new Error("epoch 0 is revealed");
  const bytes = session.relayed.clientToServer;
  const last = splitRecords(bytes, "client").records[epoch.firstRecord + epoch.records - 1]!;
  const sealer = new RecordSealer(readHellos(session.relayed).suite, epoch.keys);
  for (let i = 0; i < epoch.records - 1; i++) sealer.seal(ContentType.applicationData, new Uint8Array(1));
  return { ...session.relayed, clientToServer: concatBytes(bytes.subarray(0, last.offset), sealer.seal(type, content), bytes.subarray(last.offset + 5 + last.fragment.length)) };
}

test("a revealed epoch ending with anything but one KeyUpdate (update_not_requested) alone in its record", () => {
  const endings = [
    handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(1)),
    handshakeMessage(HandshakeType.newSessionTicket, Uint8Array.of(0, 0, 0, 0)),
    Uint8Array.of(HandshakeType.keyUpdate, 0),
    concatBytes(handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(0)), Uint8Array.of(4)),
  ];
  for (const ending of endings) {
    expectRefusal(keys, "transcript_invalid", /^client epoch 0 does not end with one KeyUpdate \(update_not_requested\) alone in its last record$/, withEpochZeroEnding(ContentType.handshake, ending));
  }
  // The same record with the KeyUpdate it held verifies: the refusals above are the endings'.
  expect(verifyRelayedSession(withEpochZeroEnding(ContentType.handshake, handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(0))), keys, expectations()).sentPartly?.hidden).toHaveLength(2);
});

test("epochs with the client's traffic secrets too, or a key without its IV", () => {
  expectRefusal({ ...keys, clientHandshakeTrafficSecret: "00".repeat(32), clientApplicationTrafficSecret: "00".repeat(32) }, "transcript_invalid", /either traffic secrets or epochs, not both/);
  expectRefusal(withEpochs((e) => ((e[0] = { records: e[0]!.records, key: e[0]!.key }), e)), "transcript_invalid", /client epoch 0's key and IV go together/);
});

describe("the request rule on what the check shows: forged requests whose records all authenticate", () => {
  /** The notary's whole check of a session whose request is `parts`: the epochs, then the request rule. */
  async function ruleOn(parts: RequestPart[], maxHiddenSpan = 4096): Promise<string | null> {
    const exchange = await recordedExchange(port, parts, options());
    const verified = verifyRelayedSession(exchange.relayed, keysOfEpochExchange(exchange), expectations());
    return revealedRequestProblem(partlyRevealedDirection(verified.sentPartly!), TARGET_HOST, { maxHiddenSpanBytes: maxHiddenSpan });
  }
  const part = (text: string, hidden = false): RequestPart => ({ bytes: encoder.encode(text), hidden });
  /** The hidden values last: the token, its line break revealed, then the cookie line hidden whole, then the blank line. */
  const honest = (): RequestPart[] => [
    part(`GET /a HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nConnection: close\r\nAuthorization: `),
    part(TOKEN, true),
    part("\r\n"),
    part(`Cookie: ${COOKIE}`, true),
    part("\r\n\r\n"),
  ];

  test("the honest request passes: hidden values last, only their line breaks revealed after them", async () => {
    expect(await ruleOn(honest())).toBeNull();
  });

  test("a header revealed after a hidden epoch is refused: the epoch may have ended the head", async () => {
    expect(await ruleOn(request())).toMatch(/reveals bytes \d+\.\.\d+ after a hidden span/);
  });

  test("a hidden span over the Host value, or over the request line's target", async () => {
    expect(await ruleOn([part("GET /a HTTP/1.1\r\nHost: "), part(TARGET_HOST, true), part("\r\nConnection: close\r\n\r\n")])).toBe("the request's Host header value is hidden");
    expect(await ruleOn([part("GET /"), part("admin", true), part(` HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nConnection: close\r\n\r\n`)])).toMatch(/starts before the end of the Host header/);
  });

  test("a second Host whose value sits where a hidden span is", async () => {
    const parts = [part(`GET /a HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nHost: `), part("evil.example", true), part("\r\nConnection: close\r\n\r\n")];
    expect(await ruleOn(parts)).toBe("the request must reveal exactly one Host header (found 2)");
  });

  test("a hidden span longer than the bound", async () => {
    expect(await ruleOn(honest(), TOKEN.length - 1)).toMatch(new RegExp(`is ${TOKEN.length} bytes long; at most ${TOKEN.length - 1} may be hidden in one span`));
  });
});

describe("the records of the epochs, forged under the revealed keys or resized in hidden ones", () => {
  let whole: RecordedExchange;
  let wholeKeys: RevealedKeys;
  let opened: ReturnType<typeof openDirection>;
  let epochKeys: TrafficKeys[];
  beforeAll(async () => {
    whole = await recordedExchange(port, [{ bytes: encoder.encode(`GET /whole HTTP/1.1\r\nHost: ${TARGET_HOST}\r\nConnection: close\r\n\r\n`), hidden: false }], options());
    wholeKeys = keysOfEpochExchange(whole);
    const [epoch] = whole.clientEpochs;
    if (!epoch?.revealed) throw new Error("a request revealed whole is one revealed epoch");
    epochKeys = [epoch.keys];
    opened = openDirection(whole.relayed.clientToServer, readHellos(whole.relayed).suite, epochKeys, "client");
  });

  /** The whole request's client side with `change` applied to its one epoch's records, sealed again under its key. */
  const forgedClient = (change: (records: OpenRecord[]) => void) => {
    const records = opened.records.map((record) => ({ ...record }));
    change(records);
    return { ...whole.relayed, clientToServer: sealDirection({ ...opened, records }, readHellos(whole.relayed).suite, epochKeys) };
  };
  const closeAt = (records: OpenRecord[]) => records.findIndex((record) => record.type === ContentType.alert);

  test("no hidden epoch: where the client's data and close_notify lay is known; with one, it is not", () => {
    const verified = verifyRelayedSession(whole.relayed, wholeKeys, expectations());
    expect(verified.sentPartly?.hidden).toEqual([]);
    expect(verified.clientRecords).toEqual({ dataStart: opened.records[0]!.offset!, closeNotifyAt: opened.records[closeAt(opened.records)]!.offset! });
    expect(verifyRelayedSession(session.relayed, keys, expectations()).clientRecords).toBeNull();
    expect(verifyRelayedSession(forgedClient(() => {}), wholeKeys, expectations()).sentPartly?.bytes).toEqual(whole.sent);
  });

  test("a record after the close_notify", () => {
    const relayed = forgedClient((records) => records.push({ type: ContentType.applicationData, content: encoder.encode("more"), key: 0 }));
    expectRefusal(wholeKeys, "transcript_invalid", /^the client sent records after its close_notify alert$/, relayed);
  });

  test("a fatal alert, or a handshake message, where data or the close_notify was due", () => {
    const alert = forgedClient((records) => (records[closeAt(records)] = { type: ContentType.alert, content: Uint8Array.of(2, 40), key: 0 }));
    expectRefusal(wholeKeys, "transcript_invalid", /^client epoch 0's record 1 holds content of type 21 where application data was due$/, alert);
    const ticket = forgedClient((records) => records.splice(0, 0, { type: ContentType.handshake, content: handshakeMessage(HandshakeType.newSessionTicket, new Uint8Array(8)), key: 0 }));
    expectRefusal(wholeKeys, "transcript_invalid", /^client epoch 0's record 0 holds content of type 22 where application data was due$/, ticket);
  });

  test("a handshake record shaped like a close_notify, an alert starting like a KeyUpdate, a record of padding only", () => {
    const closeShaped = forgedClient((records) => records.splice(0, 0, { type: ContentType.handshake, content: Uint8Array.of(1, 0), key: 0 }));
    expectRefusal(wholeKeys, "transcript_invalid", /^client epoch 0's record 0 holds content of type 22 where application data was due$/, closeShaped);
    const keyUpdateShaped = forgedClient((records) => records.splice(0, 0, { type: ContentType.alert, content: Uint8Array.of(HandshakeType.keyUpdate, 1), key: 0 }));
    expectRefusal(wholeKeys, "transcript_invalid", /^client epoch 0's record 0 holds content of type 21 where application data was due$/, keyUpdateShaped);
    const padding = forgedClient((records) => records.splice(0, 0, { type: 0, content: new Uint8Array(3), key: 0 }));
    expectRefusal(wholeKeys, "transcript_invalid", /^the client's protected record 0 has no content type$/, padding);
  });

  test("no close_notify: the data located, no close", () => {
    const unclosed = forgedClient((records) => void records.splice(closeAt(records), 1));
    const verified = verifyRelayedSession(unclosed, wholeKeys, expectations());
    expect(verified.clientRecords).toEqual({ dataStart: opened.records[0]!.offset!, closeNotifyAt: null });
  });

  test("a client that sent no ChangeCipherSpec; client bytes that end after its hello", () => {
    const records = splitRecordsOf(whole.relayed.clientToServer);
    const ccs = records.find((record) => record.type === ContentType.changeCipherSpec)!;
    const bytes = whole.relayed.clientToServer;
    const withoutCcs = concatBytes(bytes.subarray(0, ccs.offset), bytes.subarray(ccs.offset + 6));
    expect(verifyRelayedSession({ ...whole.relayed, clientToServer: withoutCcs }, wholeKeys, expectations()).sentPartly?.bytes).toEqual(whole.sent);
    expectRefusal(wholeKeys, "transcript_invalid", /^the client's bytes end before its handshake flight$/, { ...whole.relayed, clientToServer: bytes.subarray(0, ccs.offset) });
  });

  test("a layout of no epochs, or of more than 33", () => {
    const base = wholeKeys as Extract<RevealedKeys, { version: "TLS1.3" }>;
    expectRefusal({ ...base, clientEpochs: [] }, "transcript_invalid", /^the layout names 0 client epochs; 1 to 33 are accepted$/, whole.relayed);
    expectRefusal({ ...base, clientEpochs: Array.from({ length: 34 }, () => base.clientEpochs![0]!) }, "transcript_invalid", /^the layout names 34 client epochs; 1 to 33 are accepted$/, whole.relayed);
    // 33 are read as a layout (which these records do not fit).
    expectRefusal({ ...base, clientEpochs: Array.from({ length: 33 }, () => base.clientEpochs![0]!) }, "transcript_invalid", /^client epoch 0's last record holds content of type 21, not its KeyUpdate/, whole.relayed);
  });

  test("client bytes that end before the handshake flight, a malformed ChangeCipherSpec, a clear record inside an epoch", () => {
    const { clientToServer } = whole.relayed;
    const records = splitRecordsOf(clientToServer);
    const ccs = records.find((record) => record.type === ContentType.changeCipherSpec)!;
    expectRefusal(wholeKeys, "transcript_invalid", /^the client's bytes end before its handshake flight$/, { ...whole.relayed, clientToServer: clientToServer.subarray(0, ccs.offset + 6) });
    const badCcs = clientToServer.slice();
    badCcs[ccs.offset + 5] = 2;
    expectRefusal(wholeKeys, "transcript_invalid", /^the client sent a malformed ChangeCipherSpec$/, { ...whole.relayed, clientToServer: badCcs });
    const firstData = opened.records[0]!.offset!;
    const clearInside = concatBytes(clientToServer.subarray(0, firstData), Uint8Array.of(ContentType.handshake, 3, 3, 0, 1, 0), clientToServer.subarray(firstData));
    expectRefusal(wholeKeys, "transcript_invalid", /^the client sent a clear record of type 22 in epoch 0$/, { ...whole.relayed, clientToServer: clearInside });
  });

  test("a layout that gives an epoch more records than the client sent", () => {
    const total = session.clientEpochs.reduce((n, epoch) => n + epoch.records, 0);
    expectRefusal(withEpochs((e) => ((e[0]!.records += total), e)), "transcript_invalid", new RegExp(`^the layout gives client epoch 0 ${session.clientEpochs[0]!.records + total} records, but the client's bytes end after ${total}: the epoch boundaries do not match the records$`));
  });

  test("a hidden epoch whose records are too short to hold data and its KeyUpdate", () => {
    const hidden = session.clientEpochs[1]!;
    const records = splitRecordsOf(session.relayed.clientToServer);
    expect(hidden.records).toBe(2);
    /** Epoch 1's two records replaced by records of these fragment lengths (nobody can open them: their key is hidden). */
    const resized = (lengths: number[]) =>
      concatBytes(
        ...records.map((record, i) => {
          const inEpoch = i - hidden.firstRecord;
          return inEpoch >= 0 && inEpoch < hidden.records
            ? concatBytes(Uint8Array.of(23, 3, 3, 0, lengths[inEpoch]!), new Uint8Array(lengths[inEpoch]!))
            : session.relayed.clientToServer.subarray(record.offset, record.offset + 5 + record.fragment.length);
        }),
      );
    // Each record must be longer than a tag, and together they must hold data besides the 5-byte KeyUpdate.
    const tooShort = /^hidden client epoch 1 is too short to hold data and its KeyUpdate$/;
    expectRefusal(keys, "transcript_invalid", tooShort, { ...session.relayed, clientToServer: resized([16, 16]) });
    expectRefusal(keys, "transcript_invalid", tooShort, { ...session.relayed, clientToServer: resized([16, 40]) });
    expectRefusal(keys, "transcript_invalid", tooShort, { ...session.relayed, clientToServer: resized([19, 20]) });
    const oneByte = verifyRelayedSession({ ...session.relayed, clientToServer: resized([19, 21]) }, keys, expectations());
    expect(oneByte.sentPartly?.hidden[0]!.end! - oneByte.sentPartly?.hidden[0]!.start!).toBe(1);
  });
});

const splitRecordsOf = (bytes: Uint8Array) => splitRecords(bytes, "client").records;

test("the same exchange revealed without its request: the server's secrets only, the request's length counted", () => {
  const serverOnly = keysOfEpochExchange(session, false);
  expect(Object.keys(serverOnly).sort()).toEqual(["serverApplicationTrafficSecret", "serverHandshakeTrafficSecret", "version"]);
  const verified = verifyRelayedSession(session.relayed, serverOnly, expectations());
  expect(verified.sent).toBeNull();
  expect(verified.sentPartly).toBeNull();
  expect(verified.recv).toEqual(session.recv);
});
