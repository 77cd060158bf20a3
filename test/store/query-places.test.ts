import { describe, expect, test } from "bun:test";
import { queryPlaces } from "../../src/store/query-places.ts";
import { appErrorOf } from "../../testkit/app-error.ts";

/** The over_capacity refusal's message, or undefined when a place was given. */
function refusedWith(take: () => unknown): string | undefined {
  const refused = appErrorOf(take);
  if (refused) expect(refused.code).toBe("over_capacity");
  return refused?.message;
}

describe("store answer places", () => {
  test("plain and streamed answers have places of their own; a place given back is free again, once", () => {
    const take = queryPlaces({ pages: 2, streams: 1, perClient: 10 });
    const held = [take("page", "a"), take("page", "b"), take("stream", "c")];
    expect(refusedWith(() => take("page", "d"))).toBe("the store is answering its maximum of 2 queries");
    expect(refusedWith(() => take("stream", "d"))).toBe("the store is streaming its maximum of 1 answers");
    held[0]!();
    held[0]!();
    expect(refusedWith(() => take("page", "d"))).toBeUndefined();
    expect(refusedWith(() => take("page", "e"))).toBe("the store is answering its maximum of 2 queries");
  });

  test("one client holds at most perClient answers of either kind; others still get theirs", () => {
    const take = queryPlaces({ pages: 10, streams: 10, perClient: 2 });
    const first = take("page", "greedy");
    take("stream", "greedy");
    expect(refusedWith(() => take("page", "greedy"))).toBe("this client holds its maximum of 2 store answers at once");
    expect(refusedWith(() => take("stream", "other"))).toBeUndefined();
    first();
    expect(refusedWith(() => take("page", "greedy"))).toBeUndefined();
  });
});
