/**
 * Parameters of `GET /stores/:id/data/partitions/:partition/:queryType`, validated strictly with the
 * reference's message texts where it has one. Nothing is replaced by a default when it was given but malformed.
 */
import * as v from "valibot";
import { AppError } from "../core/errors.ts";
import { parseOrThrow } from "../core/schema.ts";
import { requestIdSchema } from "../core/request-id.ts";
import { MAX_PARTITION, PROTOCOL_VERSION, type MessageRef } from "./message.ts";

export const QUERY_TYPES = ["last", "from", "range"] as const;
export const FORMATS = ["object", "raw"] as const;
/** Largest sequence number an absent `toSequenceNumber` stands for (any stored one is smaller). */
const ANY_SEQUENCE_NUMBER = Number.MAX_SAFE_INTEGER;

export type QueryType = (typeof QUERY_TYPES)[number];
export type Format = (typeof FORMATS)[number];

interface Common {
  format: Format;
  verifyNetworkResponses: boolean;
  /** Chosen by the client for `verifyNetworkResponses` (binds the signed answer to its own request); else fresh. */
  requestId?: string;
}

export type StoreQuery = Common &
  (
    | { type: "last"; count: number }
    | { type: "from"; from: MessageRef; publisherId?: string; msgChainId?: string }
    | { type: "range"; from: MessageRef; to: MessageRef; publisherId?: string; msgChainId?: string }
  );

const integerText = (message: (input: string) => string) =>
  v.pipe(
    v.string(),
    v.check((text) => /^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)), (issue) => message(String(issue.input))),
    v.transform(Number),
  );

const queryNumber = (name: string) => v.optional(integerText((input) => `Query parameter "${name}" not a number: ${input}`));
const nonEmpty = (name: string) => v.optional(v.pipe(v.string(), v.minLength(1, `Query parameter "${name}" is empty`)));

export const partitionSchema = v.pipe(
  integerText((input) => `Path parameter "partition" not a number: ${input}`),
  v.minValue(0, (issue) => `Path parameter "partition" must not be negative: ${issue.input}`),
  v.maxValue(MAX_PARTITION, (issue) => `Path parameter "partition" must be at most ${MAX_PARTITION}: ${issue.input}`),
);

export const queryTypeSchema = v.picklist(QUERY_TYPES, (issue) => `Unknown query type: ${String(issue.input)} (expected one of ${QUERY_TYPES.join(", ")})`);

export const querySchema = v.object({
  count: queryNumber("count"),
  fromTimestamp: queryNumber("fromTimestamp"),
  fromSequenceNumber: queryNumber("fromSequenceNumber"),
  toTimestamp: queryNumber("toTimestamp"),
  toSequenceNumber: queryNumber("toSequenceNumber"),
  publisherId: nonEmpty("publisherId"),
  msgChainId: nonEmpty("msgChainId"),
  format: v.optional(v.picklist(FORMATS, (issue) => `Query parameter "format" is invalid: ${issue.input}`), "object"),
  version: v.optional(v.literal(String(PROTOCOL_VERSION), (issue) => `Query parameter "version" is not supported: ${issue.input}`)),
  verifyNetworkResponses: v.optional(
    v.picklist(["true", "false"], (issue) => `Query parameter "verifyNetworkResponses" is invalid: ${issue.input}`),
    "false",
  ),
  requestId: v.optional(requestIdSchema((issue) => `Query parameter "requestId" is not a UUID: ${issue.input}`)),
});

/** The schemas here word every message in full (the reference's texts). */
const parseQueryPart = <S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> => parseOrThrow(schema, input, "invalid_query", { messageOnly: true });

/** The query of a type from its parameters as `querySchema` read them: what one type needs of them, checked. */
export function storeQueryOf(queryType: QueryType, q: v.InferOutput<typeof querySchema>): StoreQuery {
  const common: Common = { format: q.format, verifyNetworkResponses: q.verifyNetworkResponses === "true", requestId: q.requestId };
  if (q.msgChainId !== undefined && q.publisherId === undefined) throw new AppError("invalid_query", 'Invalid combination of "publisherId" and "msgChainId"');
  switch (queryType) {
    case "last":
      return { ...common, type: "last", count: q.count ?? 1 };
    case "from": {
      if (q.fromTimestamp === undefined) throw new AppError("invalid_query", 'Query parameter "fromTimestamp" required.');
      const from = { timestamp: q.fromTimestamp, sequenceNumber: q.fromSequenceNumber ?? 0 };
      return { ...common, type: "from", from, publisherId: q.publisherId, msgChainId: q.msgChainId };
    }
    case "range": {
      if (q.fromTimestamp === undefined) throw new AppError("invalid_query", 'Query parameter "fromTimestamp" required.');
      if (q.toTimestamp === undefined) {
        throw new AppError(
          "invalid_query",
          'Query parameter "toTimestamp" required as well. To request all messages since a timestamp, use the endpoint /stores/:id/data/partitions/:partition/from',
        );
      }
      if (q.publisherId !== undefined && q.msgChainId === undefined) throw new AppError("invalid_query", 'Invalid combination of "publisherId" and "msgChainId"');
      const from = { timestamp: q.fromTimestamp, sequenceNumber: q.fromSequenceNumber ?? 0 };
      const to = { timestamp: q.toTimestamp, sequenceNumber: q.toSequenceNumber ?? ANY_SEQUENCE_NUMBER };
      return { ...common, type: "range", from, to, publisherId: q.publisherId, msgChainId: q.msgChainId };
    }
  }
}

/** A query as a client names it (the store route reads the same schemas from the request it declares). */
export const parseStoreQuery = (queryType: string, parameters: Record<string, string | undefined>): StoreQuery =>
  storeQueryOf(parseQueryPart(queryTypeSchema, queryType), parseQueryPart(querySchema, parameters));
