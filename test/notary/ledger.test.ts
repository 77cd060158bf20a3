import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AppError } from "../../src/core/errors.ts";
import { memoryLedger, openLedger } from "../../src/notary/ledger.ts";
import { tempDir } from "../../testkit/env.ts";

/** The ledger in SQLite (a real file, reopened) and in memory; in PostgreSQL, ledger.process.test.ts. */
async function refusal(work: Promise<unknown>): Promise<AppError> {
  const error = await work.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe("the notary's ledger", () => {
  test("SQLite: an id recorded once, refused after, also once reopened; another notary's rows are its own", async () => {
    const path = join(tempDir("ledger"), "keys", "notary-ledger.sqlite");
    const id = crypto.randomUUID();
    const ledger = await openLedger({ kind: "sqlite", path }, "sha256:a");
    await ledger.record(id);
    await ledger.record(crypto.randomUUID());
    const again = await refusal(ledger.record(id));
    expect(again.code).toBe("already_attested");
    expect(again.message).toBe(`this notary already signed a statement for request id ${id}: it signs one per request id, ever`);
    await ledger.close();
    const reopened = await openLedger({ kind: "sqlite", path }, "sha256:a");
    expect((await refusal(reopened.record(id))).code).toBe("already_attested");
    await reopened.close();
    // Notaries sharing one database: each has its own ids.
    const other = await openLedger({ kind: "sqlite", path }, "sha256:b");
    await other.record(id);
    await other.close();
  });

  test("memory: the same rule for a key that lives in this process alone", async () => {
    const opened = await openLedger({ kind: "memory" }, "sha256:a");
    const once = crypto.randomUUID();
    await opened.record(once);
    expect((await refusal(opened.record(once))).code).toBe("already_attested");
    await opened.close();
    const ledger = memoryLedger();
    const id = crypto.randomUUID();
    await ledger.record(id);
    expect((await refusal(ledger.record(id))).code).toBe("already_attested");
    await ledger.record(crypto.randomUUID());
  });

  test("a ledger that cannot be opened stops the notary: storage_failed naming where", async () => {
    // Its folder is a file: no user, root included, can make a database there.
    const file = join(tempDir("ledger-bad"), "not-a-folder");
    writeFileSync(file, "");
    const path = join(file, "notary-ledger.sqlite");
    const error = await refusal(openLedger({ kind: "sqlite", path }, "sha256:a"));
    expect(error.code).toBe("storage_failed");
    expect(error.message).toStartWith(`the notary's ledger cannot be opened at ${path}`);
  });
});
