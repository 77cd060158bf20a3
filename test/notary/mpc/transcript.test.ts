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
