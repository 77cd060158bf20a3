import type { ExchangeRequest } from "../../../core/exchange.ts";
import type { SessionSizes } from "../../../core/session-sizes.ts";
import { fitsIn } from "./pool-policy.ts";

/**
 * Sessions come in a few sizes ("classes"): MPC setup cost grows with the received-data limit (12 s at
 * 1 KiB, 21-25 s at 4 KiB, 41-45 s at 16 KiB on 2 cores), so each exchange gets the smallest class that
 * carries it. Pure decisions only: tested without MPC.
 */

/** A class's name, as it appears in `/pool`, logs and `T-SESSION-*` headers: `sent/recv` bytes. */
export const className = (sizes: SessionSizes): string => `${sizes.maxSentData}/${sizes.maxRecvData}`;

const bySize = (a: SessionSizes, b: SessionSizes) => a.maxRecvData - b.maxRecvData || a.maxSentData - b.maxSentData;

/**
 * The classes in use, smallest first: the configured ones cut to the prover's limits, plus `also` (the
 * default class), plus the limits themselves (always the largest), without duplicates.
 */
export function classesWithin(configured: readonly SessionSizes[], limits: SessionSizes, also: readonly SessionSizes[] = []): SessionSizes[] {
  const cut = [...configured, ...also, limits].map((c) => ({
    maxSentData: Math.min(c.maxSentData, limits.maxSentData),
    maxRecvData: Math.min(c.maxRecvData, limits.maxRecvData),
  }));
  const unique = new Map(cut.map((c) => [className(c), c]));
  return [...unique.values()].sort(bySize);
}

/** The smallest class that carries `needed`; the largest when none does (the engine then says what overflowed). */
export function smallestFitting(classes: readonly SessionSizes[], needed: SessionSizes): SessionSizes {
  return classes.find((c) => fitsIn(needed, c)) ?? classes[classes.length - 1]!;
}

/**
 * An answer size learned before, with room for answers that vary (dates, ids, list lengths). Small on
 * purpose: a bigger margin would push a 1 KB answer out of the smallest class, and a GET that still
 * overflows costs one repeat.
 */
export const withMargin = (bytes: number): number => Math.ceil(bytes * 1.1) + 64;

/**
 * Bytes the engine sends for this request: request line, headers, JSON body, plus what it adds itself
 * (`content-type` and `content-length` with a body) and a little slack.
 */
export function requestBytes(request: ExchangeRequest): number {
  const encoder = new TextEncoder();
  let bytes = encoder.encode(`${request.method} ${request.pathAndQuery} HTTP/1.1\r\n\r\n`).length;
  for (const [name, value] of request.headers) bytes += encoder.encode(`${name}: ${value}\r\n`).length;
  if (request.body !== undefined) bytes += encoder.encode(JSON.stringify(request.body)).length + 64;
  return bytes + 32;
}

const NUMERIC = /^\d+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LONG_HEX = /^[0-9a-f]{16,}$/i;

/**
 * What answers of similar size share: host, method and path shape, with numeric, UUID and long hex segments
 * folded (`/users/42` and `/users/43` are one endpoint). The query is left out: its values are the client's.
 */
export function endpointKey(host: string, method: string, pathAndQuery: string): string {
  const path = pathAndQuery.split("?")[0]!;
  const shape = path
    .split("/")
    .map((segment) => (NUMERIC.test(segment) || UUID.test(segment) || LONG_HEX.test(segment) ? ":id" : segment))
    .join("/");
  return `${method.toUpperCase()} ${host.toLowerCase()}${shape}`;
}

export interface SizingInput {
  classes: readonly SessionSizes[];
  /** The class for endpoints never seen whose answer cannot be repeated. */
  defaultClass: SessionSizes;
  /** What the client announced with `T-MAX-SENT-DATA` / `T-MAX-RECV-DATA`. */
  announced: Partial<SessionSizes>;
  requestBytes: number;
  /** The largest answer this endpoint gave recently, if known. */
  learnedRecv?: number;
  /** A too-small guess costs one repeat (GET with repeats on) rather than a failed request. */
  canRepeat: boolean;
}

/** Where the received-data size of a session came from. */
export type SizingReason = "announced" | "learned" | "default" | "smallest";

export interface SessionNeed {
  /** The class chosen: warm sessions are kept and counted per class. */
  class: SessionSizes;
  /** A warm session at least this big carries the exchange. */
  fits: SessionSizes;
  /** What an on-demand session is set up with: announced sizes exactly (a client's bound is kept), else the class. */
  setup: SessionSizes;
  reason: SizingReason;
}

/**
 * The session an exchange needs. The request's size is known; the answer's comes from the client, else
 * from what the endpoint answered before (with a margin), else: for a repeatable request the smallest
 * class (a miss costs one cheap repeat), otherwise the default class.
 */
export function planSession(input: SizingInput): SessionNeed {
  const { announced, classes } = input;
  const smallest = classes[0]!;
  const [recv, reason]: [number, SizingReason] =
    announced.maxRecvData !== undefined
      ? [announced.maxRecvData, "announced"]
      : input.learnedRecv !== undefined
        ? [withMargin(input.learnedRecv), "learned"]
        : input.canRepeat
          ? [smallest.maxRecvData, "smallest"]
          : [input.defaultClass.maxRecvData, "default"];
  const fits = { maxSentData: announced.maxSentData ?? input.requestBytes, maxRecvData: recv };
  const chosen = smallestFitting(classes, fits);
  const setup = {
    maxSentData: announced.maxSentData ?? chosen.maxSentData,
    maxRecvData: announced.maxRecvData ?? chosen.maxRecvData,
  };
  return { class: chosen, fits, setup, reason };
}

/** What the engine said when an exchange did not fit: the direction, and bytes it had seen at least. */
export interface Overflow {
  direction: "sent" | "recv";
  /** Unknown when the engine's message did not say. */
  atLeastBytes?: number;
}

/** A TLS record carries at most 16 KiB: an overflow this large may hide more records behind it. */
const TLS_RECORD_BYTES = 16 * 1024;

/**
 * The class to repeat an exchange with after it overflowed `current`: the smallest class bigger in the
 * overflowing direction that carries what the engine saw, with a margin; the largest class when the engine
 * did not say or saw a whole record; null when no class is bigger.
 */
export function classForRepeat(classes: readonly SessionSizes[], current: SessionSizes, overflow: Overflow): SessionSizes | null {
  const key = overflow.direction === "recv" ? "maxRecvData" : "maxSentData";
  const bigger = classes.filter((c) => c[key] > current[key]);
  if (bigger.length === 0) return null;
  const seen = overflow.atLeastBytes;
  if (seen === undefined || seen >= TLS_RECORD_BYTES) return bigger[bigger.length - 1]!;
  const needed = { ...current, [key]: withMargin(seen) };
  return smallestFitting(bigger, needed);
}
