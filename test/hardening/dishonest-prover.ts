/**
 * A prover that lies to the notary, run as its own process by dishonest-prover.e2e.test.ts (the engine is one wasm
 * instance per process): a real MPC session through the real engine, every byte revealed, then an attestation
 * request declaring the response's secret value hidden. Or (`hidden-host`) every byte revealed but the request's
 * Host value, so that readers could not tell which server the request was for. Or (`cut`) GET /cut from a target
 * that stops mid-answer, every byte the engine read revealed: what the notary says of a transcript ended early. Or
 * (`warm`) an honest proof of /data asked for seconds after its setup, as a warm pool's session is: the notary's
 * dating. Or (`revealed-after-hidden`) one header value hidden with a revealed header line after it (or before Host, where
 * the engine wrote Host last): the header swap of the request rule, whose hidden bytes could have ended the head.
 * Or (`untrusted`) GET /data from a target whose certificate expired, skipping the prover's pre-check of it: what the
 * engine itself makes of the certificate.
 * Prints `{"code","message"}` of the notary's refusal, `{"engine": message}` when the engine itself failed the
 * exchange, or `{"signed":true, ...}` with the proof's times and when the request started if the notary signed.
 * Usage: bun dishonest-prover.ts <notary url> <target port> <test CA path> [hidden-secret|hidden-host|cut|warm|revealed-after-hidden|untrusted]
 */
import { readFileSync } from "node:fs";
import { startLoopbackBridge } from "../../src/engine/bridge.ts";
import { localProvers } from "../../src/engine/prover.ts";
import { closeProverSession, setupProverSession } from "../../src/engine/session.ts";
import { startEngine } from "../../src/engine/wasm.ts";
import { toAppError } from "../../src/core/errors.ts";
import { createNotaryClient } from "../../src/prover/notary/client.ts";
import { mpcNotarySessions } from "../../src/prover/mpc/notary-sessions.ts";
import type { AttestationRequest } from "../../src/protocol/notary.ts";
import { revealTranscript } from "../../src/engine/session.ts";
import { parseHttpMessage } from "../../src/http1/message.ts";
import { getFromTarget, revealAll } from "../../testkit/engine-exchange.ts";
import { SECRET_VALUE } from "../../testkit/target.ts";
import { TARGET_HOST } from "../../testkit/tls-fixture.ts";

const [notaryUrl, targetPort, caPath, lie = "hidden-secret"] = process.argv.slice(2) as [string, string, string, string?];
await startEngine({ threads: 2, testTrustAnchorPem: readFileSync(caPath, "utf8") });
const bridge = startLoopbackBridge();
const notary = createNotaryClient(notaryUrl);
const session = await setupProverSession(mpcNotarySessions(notary), localProvers, TARGET_HOST, { maxSentData: 512, maxRecvData: 1024 });
// A warm session waits for its request: the notary's socket is quiet meanwhile.
if (lie === "warm") await Bun.sleep(12_000);
const requestStartedAt = Date.now();
let exchange: Awaited<ReturnType<typeof getFromTarget>>;
try {
  exchange = await getFromTarget(session, bridge, Number(targetPort), lie === "cut" ? "/cut" : "/data");
} catch (error) {
  console.log(JSON.stringify({ engine: toAppError(error, "session_failed").message, cause: String((error as Error).cause ?? "") }));
  process.exit(0);
}
let redactions: AttestationRequest["redactions"] = [];
if (lie === "cut" || lie === "warm") {
  await revealAll(session, exchange);
} else if (lie === "hidden-host") {
  const start = Buffer.from(exchange.sent).indexOf(TARGET_HOST);
  if (start < 0) throw new Error("the request lacks the host");
  const end = start + TARGET_HOST.length;
  await revealTranscript(session, { sent: [{ start: 0, end: start }, { start: end, end: exchange.sent.length }], recv: [{ start: 0, end: exchange.recv.length }] });
  redactions = [{ pattern: "req:header:host", matched: true, spans: [{ direction: "sent", start, end }] }];
} else if (lie === "revealed-after-hidden") {
  // The engine orders the headers itself: hide the first header's value unless it is Host, else the second's; either
  // way a revealed header line follows the hidden value, or Host does.
  const fields = parseHttpMessage(exchange.sent).headers;
  const isHost = (field: (typeof fields)[number]) => Buffer.from(exchange.sent.subarray(field.name.start, field.name.end)).toString("latin1").toLowerCase() === "host";
  const hidden = (isHost(fields[0]!) ? fields[1]! : fields[0]!).value;
  await revealTranscript(session, { sent: [{ start: 0, end: hidden.start }, { start: hidden.end, end: exchange.sent.length }], recv: [{ start: 0, end: exchange.recv.length }] });
  redactions = [{ pattern: "req:header:x", matched: true, spans: [{ direction: "sent", start: hidden.start, end: hidden.end }] }];
} else {
  await revealAll(session, exchange);
  const start = Buffer.from(exchange.recv).indexOf(SECRET_VALUE);
  if (start < 0) throw new Error("the response lacks the secret value");
  redactions = [{ pattern: "res:body:secret", matched: true, spans: [{ direction: "recv", start, end: start + SECRET_VALUE.length }] }];
}
try {
  const proof = await notary.attest("mpc", session.notarySessionId, { requestId: crypto.randomUUID(), redactions });
  const { connectionTime, responseTime, responseFraming } = proof.body;
  console.log(JSON.stringify({ signed: true, connectionTime, responseTime, responseFraming, requestStartedAt, recv: Buffer.from(exchange.recv).toString("latin1") }));
} catch (error) {
  const failure = toAppError(error);
  console.log(JSON.stringify({ code: failure.code, message: failure.message }));
} finally {
  closeProverSession(session);
}
bridge.stop();
process.exit(0);
