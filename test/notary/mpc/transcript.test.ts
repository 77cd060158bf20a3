import { expect, test } from "bun:test";
import type { VerifierOutput } from "../../../src/engine/verifier.ts";
import { mpcTranscript } from "../../../src/notary/mpc/transcript.ts";

/** What an MPC notary signs of what its Verifier verified: the server's name as TLS gives it, as proxy mode does. */

const output = (serverName: string | undefined): VerifierOutput => ({
  server_name: serverName,
  connection_info: { time: 0, version: "V1_2", transcript_length: { sent: 2, recv: 2 } },
  transcript: { sent: [71, 69], sent_authed: [{ start: 0, end: 2 }], recv: [72, 84], recv_authed: [{ start: 0, end: 2 }] },
});
const transcriptOf = (serverName: string | undefined) => mpcTranscript({ output: output(serverName), activeSince: 1_000, verifiedAt: 2_000 }, 4096);

test("the server name the prover revealed, without a fully qualified name's trailing dot", () => {
  expect(transcriptOf("api.example.com").serverName).toBe("api.example.com");
  expect(transcriptOf("api.example.com.").serverName).toBe("api.example.com");
});

test("none, or one with an empty label, is no proof", () => {
  expect(() => transcriptOf(undefined)).toThrow("the prover did not reveal the server identity");
  expect(() => transcriptOf("api..example.com")).toThrow("the prover revealed a server name with an empty label");
});

test("what an MPC notary knows of the exchange: its TLS version, its times in seconds, its end unseen, the request rule with the session's send bound", () => {
  const transcript = mpcTranscript({ output: output("api.example.com"), activeSince: 1_717_171_717_999, verifiedAt: 1_717_171_720_500 }, 4096);
  expect(transcript).toEqual({
    mode: "mpc",
    serverName: "api.example.com",
    tlsVersion: "TLS1.2",
    connectionTime: 1_717_171_717,
    responseTime: 1_717_171_720,
    sent: { length: 2, bytes: Uint8Array.from([71, 69]), seen: [{ start: 0, end: 2 }] },
    recv: { length: 2, bytes: Uint8Array.from([72, 84]), seen: [{ start: 0, end: 2 }] },
    hiddenBy: "prover",
    connectionEnd: { closed: false, why: "an MPC notary does not see how the connection ended" },
    requestRule: { maxHiddenSpanBytes: 4096 },
  });
  const tls13 = { ...output("api.example.com"), connection_info: { time: 0, version: "V1_3" as const, transcript_length: { sent: 2, recv: 2 } } };
  expect(mpcTranscript({ output: tls13, activeSince: 0, verifiedAt: 0 }, 4096).tlsVersion).toBe("TLS1.3");
});

test("every refusal is session_failed: no server identity, an empty label, no transcript", () => {
  const refusal = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return (error as { code: string }).code;
    }
    return undefined;
  };
  expect(refusal(() => transcriptOf(undefined))).toBe("session_failed");
  expect(refusal(() => transcriptOf("api..example.com"))).toBe("session_failed");
  const untranscribed = { ...output("api.example.com"), transcript: undefined } as unknown as VerifierOutput;
  expect(() => mpcTranscript({ output: untranscribed, activeSince: 0, verifiedAt: 0 }, 4096)).toThrow("the prover revealed no transcript");
  expect(refusal(() => mpcTranscript({ output: untranscribed, activeSince: 0, verifiedAt: 0 }, 4096))).toBe("session_failed");
});
