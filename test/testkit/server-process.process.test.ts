import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../testkit/env.ts";
import { isRunning, processState } from "../../testkit/process.ts";
import { eventually, waitUntil } from "../../testkit/wait.ts";

/**
 * A server process a test started dies with the test process, even one killed outright (SIGKILL, as a stopped
 * `bun test --bail` run can be): no exit handler runs then, so only the kernel can end it.
 */

const EXCHANGE = join(import.meta.dir, "..", "tls", "support", "exchange.ts");
const IDENTITIES = join(import.meta.dir, "..", "tls", "support", "identities.ts");

test("openssl s_server started by a test process that is then killed with SIGKILL ends with it", async () => {
  const script = [
    `import { startOpensslTls13Target } from ${JSON.stringify(EXCHANGE)};`,
    `import { verifyIdentities } from ${JSON.stringify(IDENTITIES)};`,
    `const target = await startOpensslTls13Target(verifyIdentities().ecdsa, ${JSON.stringify(tempDir("s-server"))}, "TLS_AES_128_GCM_SHA256");`,
    "console.log(JSON.stringify({ pid: target.pid }));",
    "await new Promise(() => {});",
  ].join("\n");
  const parent = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  let printed = "";
  void (async () => {
    for await (const chunk of parent.stdout) printed += new TextDecoder().decode(chunk);
  })();
  const line = await waitUntil("the test process to start s_server", () => printed, (text) => text.includes("\n"), 30_000, {
    hopeless: () => (parent.exitCode !== null ? `it exited with ${parent.exitCode}` : undefined),
  });
  const { pid } = JSON.parse(line) as { pid: number };
  try {
    expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("openssl");
    parent.kill("SIGKILL");
    await parent.exited;
    // Gone, or a zombie nobody reaps here: either way it serves no more.
    const ended = () => !isRunning(pid) || processState(pid) === "Z";
    expect(await eventually(ended, (done) => done, 5_000)).toBe(true);
  } finally {
    if (isRunning(pid)) process.kill(pid, "SIGKILL");
  }
}, 40_000);
