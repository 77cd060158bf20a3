/**
 * How many store answers run at once: each holds a page of rows in memory and a database read or cursor. Plain
 * answers and SSE streams have places of their own, and every client (its API key, or its address without keys)
 * holds at most `perClient` of either at once, so that one client cannot take every place.
 */
import { AppError } from "../core/errors.ts";

export type AnswerKind = "page" | "stream";

export interface QueryPlaceLimits {
  /** Plain HTTP answers at once (PROVER_STORE_QUERIES). */
  pages: number;
  /** SSE answers at once (PROVER_STORE_STREAMS). */
  streams: number;
  /** Answers of either kind one client holds at once (PROVER_STORE_PER_CLIENT). */
  perClient: number;
}

/** Takes a place or throws over_capacity (503, Retry-After); the function returned gives it back, once. */
export type TakePlace = (kind: AnswerKind, client: string) => () => void;

export function queryPlaces(limits: QueryPlaceLimits): TakePlace {
  const running: Record<AnswerKind, number> = { page: 0, stream: 0 };
  const byClient = new Map<string, number>();
  const max: Record<AnswerKind, number> = { page: limits.pages, stream: limits.streams };
  return (kind, client) => {
    if (running[kind] >= max[kind]) {
      throw new AppError("over_capacity", `the store is ${kind === "page" ? "answering" : "streaming"} its maximum of ${max[kind]} ${kind === "page" ? "queries" : "answers"}`);
    }
    const held = byClient.get(client) ?? 0;
    if (held >= limits.perClient) throw new AppError("over_capacity", `this client holds its maximum of ${limits.perClient} store answers at once`);
    running[kind] += 1;
    byClient.set(client, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      running[kind] -= 1;
      const left = (byClient.get(client) ?? 1) - 1;
      if (left > 0) byClient.set(client, left);
      else byClient.delete(client);
    };
  };
}
