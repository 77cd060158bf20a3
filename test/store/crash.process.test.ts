/**
 * Durability: a real server process acknowledges publishes over HTTP and is killed with SIGKILL while more are in
 * flight; every acknowledged message must be readable afterwards.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { MessageId, MessageObject } from "../../src/store/index.ts";
import { backends, reopen } from "./backends.ts";

const SERVER = join(import.meta.dir, "fixtures", "serve-store.ts");

async function startServer(env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, SERVER], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  let output = "";
  while (!/port \d+\n/.test(output)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited before listening: ${output}`);
    output += new TextDecoder().decode(value);
  }
  return { child, port: Number(/port (\d+)/.exec(output)?.[1]) };
}

for (const backend of backends) {
  describe(`crash durability on ${backend.name}`, () => {
    test("nothing acknowledged is lost when the server is SIGKILLed mid-stream", async () => {
      const opened = await backend.open();
      await opened.handle.close();
      const { url, dataDir, table } = opened.options;
      const { child, port } = await startServer({ STORE_DATA_DIR: dataDir, STORE_URL: url ?? "", STORE_TABLE: table });
      const acknowledged: MessageId[] = [];
      let killed = false;
      const publishOne = async (n: number) => {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/stores/crash/data/partitions/0`, {
            method: "POST",
            body: JSON.stringify([{ content: { n, part: 1 } }, { content: { n, part: 2 } }]),
          });
          if (response.status !== 200) throw new Error(`status ${response.status}`);
          const { messages } = (await response.json()) as { messages: { id: MessageId }[] };
          if (killed) return; // answered after the kill was sent: not counted as acknowledged before the crash
          acknowledged.push(...messages.map((m) => m.id));
          if (acknowledged.length >= 60) {
            killed = true;
            child.kill("SIGKILL");
          }
        } catch {
          // Requests cut off by the kill: never acknowledged, so they may or may not be stored.
        }
      };
      await Promise.all(Array.from({ length: 80 }, (_, n) => publishOne(n)));
      await child.exited;
      expect(child.signalCode).toBe("SIGKILL");
      expect(acknowledged.length).toBeGreaterThanOrEqual(60);

      await reopen(opened);
      try {
        const rows = await opened.store.read({ streamId: "crash", partition: 0, limit: 1000, texts: ["raw", "object"] });
        const stored = new Set(rows.map((r) => `${r.timestamp}/${r.sequenceNumber}`));
        const missing = acknowledged.filter((id) => !stored.has(`${id.timestamp}/${id.sequenceNumber}`));
        expect(missing).toEqual([]);
        // Every stored message is complete, in both texts (no torn writes).
        expect(rows.every((r) => (JSON.parse(r.raw ?? "") as unknown[])[0] === 32)).toBe(true);
        expect(rows.every((r) => (JSON.parse(r.object ?? "") as MessageObject).metadata.id.streamId === "crash")).toBe(true);
      } finally {
        await opened.cleanup();
      }
    }, 30_000);
  });
}
