import { describe, expect, test } from "bun:test";
import { AppError } from "../../../src/core/errors.ts";
import { type ProxyRefusal, proxyPlaces } from "../../../src/notary/proxy-mode/places.ts";

/** The place bookkeeping alone: what is counted when, and each refusal's label. */
function places(registered = () => 0) {
  const refused: ProxyRefusal[] = [];
  const bookkeeping = proxyPlaces({ concurrency: 3, maxPendingConnects: 2 }, registered, (reason, error) => (refused.push(reason), error));
  return { bookkeeping, refused };
}

describe("proxy places", () => {
  test("a place is taken at once, registered sessions count too, and each is given back once", () => {
    let registered = 1;
    const { bookkeeping, refused } = places(() => registered);
    const first = bookkeeping.reserve();
    bookkeeping.reserve();
    expect(() => bookkeeping.reserve()).toThrow(new AppError("over_capacity", "the notary is running its maximum of 3 proxy sessions"));
    expect(refused).toEqual(["over_capacity"]);
    first();
    first();
    expect(bookkeeping.reserved()).toBe(1);
    bookkeeping.reserve();
    registered = 0;
    expect(bookkeeping.reserved()).toBe(2);
    bookkeeping.reserve();
    expect(() => bookkeeping.reserve()).toThrow("maximum of 3");
  });

  test("connections in progress are bounded apart, and a failed one gives its turn back", async () => {
    const { bookkeeping, refused } = places();
    let open!: () => void;
    const slow = new Promise<void>((resolve) => (open = resolve));
    const pending = [bookkeeping.connecting(() => slow), bookkeeping.connecting(() => slow)];
    await expect(bookkeeping.connecting(async () => "third")).rejects.toThrow("already connecting to 2 targets");
    expect(refused).toEqual(["connects_pending"]);
    open();
    await Promise.all(pending);
    await expect(bookkeeping.connecting(() => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    expect(await bookkeeping.connecting(async () => "next")).toBe("next");
  });
});
