import { Prover } from "tlsn-wasm";

/**
 * tlsn-wasm takes a request's headers as a Rust HashMap and writes them in its iteration order. On wasm, Rust's
 * RandomState has fixed keys and each new map on a thread takes the next seed, so that order follows how many maps
 * the engine's thread made before: the same sequence in every fresh engine host (a fresh prover's first GETs with a
 * hidden header took five sessions each before the engine wrote Host first, run after run). A random number of
 * throwaway maps before a request makes each session's order a draw of its own: Host comes before a given header in
 * about one session of two (request-layout.ts repeats a GET whose layout cannot be proven).
 */
const MOST_THROWAWAY_MAPS = 32;

/** Never dialled: a prover that is not set up refuses send_request once the wasm side has read the request. */
const UNUSED_URL = "ws://127.0.0.1:9";

/** A prover that is never set up: its calls only read their arguments and refuse. */
export const throwawayProver = (): Prover =>
  new Prover({
    server_name: "throwaway.invalid",
    max_sent_data: 1,
    max_sent_records: undefined,
    max_recv_data_online: undefined,
    max_recv_data: 1,
    max_recv_records_online: undefined,
    defer_decryption_from_start: undefined,
    network: "Latency",
    client_auth: undefined,
  });

/**
 * One throwaway map: a request the prover refuses ("expected State::Setup"), its header map made before the
 * refusal. Resolves to the refusal's words.
 */
export const throwawayMap = (prover: Prover): Promise<string> =>
  prover.send_request(UNUSED_URL, { uri: "/", method: "GET", headers: new Map([["host", []]]), body: undefined }).then(
    () => "sent",
    (refusal: unknown) => String(refusal),
  );

/** Makes a random number of throwaway header maps (returned) in the engine's thread. */
export async function drawHeaderOrder(random: () => number = Math.random): Promise<number> {
  const maps = Math.floor(random() * MOST_THROWAWAY_MAPS);
  if (maps === 0) return 0;
  const throwaway = throwawayProver();
  try {
    for (let made = 0; made < maps; made++) await throwawayMap(throwaway);
  } finally {
    throwaway.free();
  }
  return maps;
}
