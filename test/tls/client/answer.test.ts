import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { concatBytes } from "@noble/hashes/utils.js";
import { AppError, type ErrorCode } from "../../../src/core/errors.ts";
import { type AnswerLimits, readAnswer } from "../../../src/tls/client/answer.ts";
import { EpochWriter } from "../../../src/tls/client/epochs.ts";
import { IncomingRecords } from "../../../src/tls/client/incoming.ts";
import { RecordWriter, plainRecord } from "../../../src/tls/client/record-writer.ts";
import { nextTrafficSecret, trafficKeys } from "../../../src/tls/key-schedule.ts";
import { RecordOpener, RecordSealer } from "../../../src/tls/record-protection.ts";
import { ContentType, HandshakeType, handshakeMessage } from "../../../src/tls/records.ts";
import { cipherSuiteOf } from "../../../src/tls/suites.ts";
import { scriptedTransport } from "./support.ts";

/**
 * The client reading the server's answer after the handshake, on records sealed here under a server application
 * secret as a TLS 1.3 server seals them: data, tickets, KeyUpdates, alerts, the end of the connection.
 */

const suite = cipherSuiteOf(0x1301, "TLS1.3");
const text = (value: string) => new TextEncoder().encode(value);
const ticket = () => handshakeMessage(HandshakeType.newSessionTicket, new Uint8Array(20));
const keyUpdate = (requested: number) => handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(requested));

/** A server's side: its records sealed under its current secret, moved on by `update`. */
function serverSide() {
  let secret: Uint8Array = new Uint8Array(randomBytes(32));
  const first = secret;
  let sealer = new RecordSealer(suite, trafficKeys(suite, secret));
  return {
    first,
    seal: (type: number, content: Uint8Array) => sealer.seal(type, content),
    update() {
      secret = nextTrafficSecret(suite.hash, secret);
      sealer = new RecordSealer(suite, trafficKeys(suite, secret));
    },
  };
}

interface Run {
  /** The client's request epochs: `updated` when it already sent a KeyUpdate (a hidden part). */
  updated?: boolean;
  limits?: Partial<AnswerLimits>;
  silenceMs?: number;
}

type Server = ReturnType<typeof serverSide>;
/** What the server sends, in order: a record it seals, a move to its next secret, or bytes as they are (made from it). */
type Step = "update" | [number, Uint8Array] | Uint8Array | ((server: Server) => Uint8Array);

/** readAnswer over the steps' bytes delivered in one chunk, then the end (or `failure`) unless `open`. */
async function answerTo(steps: Step[], run: Run = {}, end: { open?: boolean; failure?: Error } = {}) {
  const server = serverSide();
  const bytes = steps.flatMap((step) => {
    if (step === "update") return (server.update(), []);
    if (step instanceof Uint8Array) return [step];
    if (typeof step === "function") return [step(server)];
    return [server.seal(step[0], step[1])];
  });
  const scripted = scriptedTransport();
  const incoming = new IncomingRecords(scripted.transport, run.silenceMs ?? 5_000);
  const writer = new RecordWriter(scripted.transport);
  const clientSecret = new Uint8Array(randomBytes(32));
  const epochs = new EpochWriter(suite, clientSecret, writer, true);
  if (run.updated) epochs.keyUpdate(false);
  writer.flush();
  scripted.written.length = 0;
  scripted.deliver(concatBytes(...bytes));
  if (!end.open) scripted.finish(end.failure);
  const answer = await readAnswer(incoming, suite, server.first, epochs, writer, { maxRecvBytes: 1 << 20, ...run.limits });
  return { answer, written: scripted.written, epochs, clientSecret };
}

async function refusal(run: () => Promise<unknown>, code: ErrorCode, message: RegExp): Promise<void> {
  const error = await run().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  expect({ code: (error as AppError).code, message: (error as AppError).message }).toEqual({ code, message: expect.stringMatching(message) });
}

const data = (value: string | Uint8Array): [number, Uint8Array] => [ContentType.applicationData, typeof value === "string" ? text(value) : value];
const CLOSE: [number, Uint8Array] = [ContentType.alert, Uint8Array.of(1, 0)];

describe("an answer read whole", () => {
  test("data across records, tickets counted and ignored, close_notify last", async () => {
    const { answer, written } = await answerTo([[ContentType.handshake, ticket()], data("HTTP/1.1 200 OK\r\n"), [ContentType.handshake, concatBytes(ticket(), ticket())], data("\r\nok"), CLOSE]);
    expect(new TextDecoder().decode(answer.recv)).toBe("HTTP/1.1 200 OK\r\n\r\nok");
    expect(answer.sessionTickets).toBe(3);
    expect(written).toHaveLength(0);
  });

  test("a long answer comes out byte for byte", async () => {
    const body = new Uint8Array(100_000).map((_, i) => i % 251);
    const steps = Array.from({ length: 7 }, (_, i) => data(body.subarray(i * 16384, (i + 1) * 16384)));
    const { answer } = await answerTo([...steps, CLOSE]);
    expect(answer.recv).toEqual(body);
  });

  test("the end of the server's bytes ends the answer too", async () => {
    const { answer } = await answerTo([data("partial")]);
    expect(new TextDecoder().decode(answer.recv)).toBe("partial");
  });

  test("a caller that finds the answer complete stops reading", async () => {
    let looks = 0;
    const complete = (recv: Uint8Array) => (looks++, new TextDecoder().decode(recv).endsWith("\r\n\r\n"));
    const { answer } = await answerTo([data("HTTP/1.1 204 No Content\r\n"), data("\r\n"), data("more")], { limits: { answerComplete: complete } }, { open: true });
    expect(new TextDecoder().decode(answer.recv)).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    expect(looks).toBe(2);
  });

  test("at most maxRecvBytes", async () => {
    const { answer } = await answerTo([data("12345"), CLOSE], { limits: { maxRecvBytes: 5 } });
    expect(answer.recv).toEqual(text("12345"));
    await refusal(() => answerTo([data("12345"), data("6"), CLOSE], { limits: { maxRecvBytes: 5 } }), "response_too_large", /^the answer exceeds 5 bytes$/);
  });
});

describe("the server's KeyUpdate", () => {
  test("followed: the records after it open under its next secret; it is no ticket", async () => {
    const { answer, written } = await answerTo([data("before "), [ContentType.handshake, keyUpdate(0)], "update", [ContentType.handshake, ticket()], data("after"), CLOSE]);
    expect(new TextDecoder().decode(answer.recv)).toBe("before after");
    expect(answer.sessionTickets).toBe(1);
    expect(written).toHaveLength(0);
  });

  test("a record of padding only has no content type", async () => {
    await refusal(() => answerTo([data("x"), [0, new Uint8Array(3)]]), "transcript_invalid", /^the server's protected record 1 has no content type$/);
  });

  test("asking for one: the client answers with its own KeyUpdate at once, in an epoch as revealed as the current", async () => {
    const { answer, written, epochs, clientSecret } = await answerTo([[ContentType.handshake, keyUpdate(1)], "update", data("after"), CLOSE]);
    expect(new TextDecoder().decode(answer.recv)).toBe("after");
    expect(epochs.keyUpdates).toBe(1);
    expect(epochs.revealed).toBe(true);
    expect(written).toHaveLength(1);
    const opened = new RecordOpener(suite, trafficKeys(suite, clientSecret), "client key", "client").open({ type: 23, header: written[0]!.subarray(0, 5), fragment: written[0]!.subarray(5), offset: 0 });
    expect(opened).toEqual({ type: ContentType.handshake, content: keyUpdate(0) });
  });

  test("malformed, or not ending its record", async () => {
    await refusal(() => answerTo([[ContentType.handshake, handshakeMessage(HandshakeType.keyUpdate, Uint8Array.of(2))]]), "transcript_invalid", /^the server's KeyUpdate is malformed or does not end its record$/);
    await refusal(() => answerTo([[ContentType.handshake, concatBytes(keyUpdate(0), ticket())]]), "transcript_invalid", /^the server's KeyUpdate is malformed or does not end its record$/);
  });
});

describe("what ends the connection badly", () => {
  test("another post-handshake message", async () => {
    await refusal(() => answerTo([[ContentType.handshake, handshakeMessage(HandshakeType.certificateRequest, Uint8Array.of(0, 0, 0))]]), "target_request_failed", /^the target sent post-handshake message type 13, which the client never asked for$/);
  });

  test("an alert in clear, another clear record, protected content of an unknown type", async () => {
    await refusal(() => answerTo([plainRecord(ContentType.alert, Uint8Array.of(2, 40))]), "target_request_failed", /^the target sent a TLS alert 40 \(handshake_failure\) in clear after the handshake$/);
    await refusal(() => answerTo([plainRecord(ContentType.handshake, ticket())]), "transcript_invalid", /^the server sent a clear record of type 22 after the handshake$/);
    await refusal(() => answerTo([[24, Uint8Array.of(1)]]), "transcript_invalid", /^the server sent protected content of type 24$/);
  });

  test("a record that does not authenticate", async () => {
    const forged = new RecordSealer(suite, trafficKeys(suite, new Uint8Array(32))).seal(ContentType.applicationData, text("x"));
    await refusal(() => answerTo([forged]), "target_request_failed", /^a TLS record of the target's answer failed its integrity check: it was changed on its way$/);
  });

  test("a fatal alert after some answer", async () => {
    await refusal(() => answerTo([data("x"), [ContentType.alert, Uint8Array.of(2, 80)]]), "target_request_failed", /^the target ended the connection with TLS alert 80 \(internal_error\)$/);
  });
});

describe("a server that refuses the client's key update: it fails before any answer once the client updated", () => {
  test.each([
    ["an alert", [[ContentType.alert, Uint8Array.of(2, 10)]], {}, /^the target answered with TLS alert 10 \(unexpected_message\) after the client's TLS 1\.3 KeyUpdate, before any answer: .*MPC mode \(T-PROOF-MODE: mpc; the target must offer TLS 1\.2\), or in proxy mode with T-PROXY-REVEAL: none/],
    ["a close_notify", [CLOSE], {}, /^the target closed the connection \(close_notify\) after the client's TLS 1\.3 KeyUpdate/],
    ["the end of its bytes", [], {}, /^the target closed the connection after the client's TLS 1\.3 KeyUpdate/],
    ["a failed connection", [], { failure: new Error("reset") }, /^the target broke the connection after the client's TLS 1\.3 KeyUpdate/],
  ] as const)("%s", async (_name, steps, end, message) => {
    await refusal(() => answerTo([...steps] as Step[], { updated: true }, end), "target_key_update_refused", message);
  });

  test("the same without a key update is an empty answer, or the failure as it is", async () => {
    expect((await answerTo([CLOSE])).answer.recv).toEqual(new Uint8Array(0));
    expect((await answerTo([])).answer.recv).toEqual(new Uint8Array(0));
    await refusal(() => answerTo([[ContentType.alert, Uint8Array.of(2, 10)]]), "target_request_failed", /^the target ended the connection with TLS alert 10/);
    // After an answer began, a close is a close whatever the client updated.
    expect((await answerTo([data("ok"), CLOSE], { updated: true })).answer.recv).toEqual(text("ok"));
  });

  test("a connection cut inside a record, after a key update: refused as broken; silence stays a timeout", async () => {
    const cut = (server: Server) => server.seal(ContentType.applicationData, text("x")).subarray(0, 10);
    await refusal(() => answerTo([cut], { updated: true }), "target_key_update_refused", /^the target broke the connection/);
    await refusal(() => answerTo([cut]), "target_request_failed", /^the target's connection ended inside a TLS record$/);
    await refusal(() => answerTo([], { updated: true, silenceMs: 30 }, { open: true }), "target_timeout", /^the target was silent for 30 ms$/);
  });
});
