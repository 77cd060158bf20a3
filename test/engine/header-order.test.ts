import { beforeAll, expect, test } from "bun:test";
import { Prover } from "tlsn-wasm";
import { drawHeaderOrder } from "../../src/engine/header-order.ts";
import { startEngine } from "../../src/engine/wasm.ts";

beforeAll(() => startEngine({ threads: 1 }), 60_000);

const notSetUp = () =>
  new Prover({
    server_name: "example.test",
    max_sent_data: 1,
    max_sent_records: undefined,
    max_recv_data_online: undefined,
    max_recv_data: 1,
    max_recv_records_online: undefined,
    defer_decryption_from_start: undefined,
    network: "Latency",
    client_auth: undefined,
  });

test("what a throwaway map rests on: a prover that is not set up refuses a request (the wasm side reads it first, making its header map)", async () => {
  const prover = notSetUp();
  try {
    const refused = await prover.send_request("ws://127.0.0.1:9", { uri: "/", method: "GET", headers: new Map([["host", []]]), body: undefined }).then(
      () => "sent",
      (error: unknown) => String(error),
    );
    expect(refused).toContain("expected State::Setup");
  } finally {
    prover.free();
  }
});

test("a draw makes from none to 31 throwaway maps and returns", async () => {
  expect(await drawHeaderOrder(() => 0)).toBe(0);
  expect(await drawHeaderOrder(() => 0.5)).toBe(16);
  expect(await drawHeaderOrder(() => 0.999)).toBe(31);
});
