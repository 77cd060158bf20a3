import { afterAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { useBuiltBinary } from "../../testkit/binary.ts";
import { processGroup } from "../../testkit/process.ts";
import { BINARY_CLI, REPO, collectText, runCli } from "../../testkit/prover.ts";
import { eventually, waitUntil } from "../../testkit/wait.ts";

useBuiltBinary();

/**
 * `cli demo` as a user runs it, in a process group of its own as a terminal would (setsid): two proofs verified
 * offline, a viewer link that answers, and after Ctrl-C (SIGINT to the group) no process of the group, no folder
 * and no listening prover left. Then `npm run demo` from the source checkout, stopped by SIGTERM in the middle of
 * its MPC proof: the same, with the one-line error of a demo that did not finish. One MPC session in all.
 */
const MPC_MS = 240_000;

interface Running {
  pid: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number>;
  /** Whether the command has not exited. Not read from its group: setsid makes that group only once it runs. */
  running: () => boolean;
}

/** Groups started here: a test that fails before it stops its demo leaves nothing running after the file. */
const started: number[] = [];
afterAll(() => {
  for (const pgid of started) {
    for (const pid of processGroup(pgid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Ended meanwhile.
      }
    }
  }
});

function startInOwnGroup(command: string[], cwd = REPO): Running {
  const child = Bun.spawn(["setsid", ...command], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  started.push(child.pid);
  return {
    pid: child.pid,
    stdout: collectText(child.stdout),
    stderr: collectText(child.stderr),
    exited: child.exited,
    running: () => child.exitCode === null && child.signalCode === null,
  };
}

/** The demo's temporary folder, from the report's "Saved as <folder>/<mode>-proof.json". */
const savedProof = (stdout: string, mode: string): string => new RegExp(`Saved as (\\S+/${mode}-proof\\.json)`).exec(stdout)![1]!;

describe("cli demo", () => {
  test("dist/cli demo: two verified proofs and a viewer link; Ctrl-C leaves no process, folder or server behind", async () => {
    const demo = startInOwnGroup([...BINARY_CLI, "demo"]);
    const context = () => `stdout:\n${demo.stdout().slice(-3000)}\nstderr:\n${demo.stderr().slice(-3000)}`;
    await waitUntil("both proofs", demo.stderr, (text) => text.includes("both proofs verified"), MPC_MS, {
      intervalMs: 500,
      hopeless: () => (demo.running() ? undefined : "the demo exited"),
      context,
    });
    const out = demo.stdout();
    expect(out.match(/^Proof valid: signed by notary key/gm)).toHaveLength(2);
    expect(out).toContain("Proof mode:   proxy");
    expect(out).toContain("GET /v1/account?user=42 HTTP/1.1"); // proxy mode with the request proven
    expect(out).toMatch(/authorization: █+\r?\n/);
    expect(out).toContain('"balance":█████████');
    expect(out).toContain("Proof mode:   mpc");
    expect(out).toContain("GET /v1/price?pair=ETH-EUR HTTP/1.1");
    expect(out).toContain("WARNING: signed under a TEST trust anchor");

    // The files and the viewer work while it runs; `cli verify` accepts the saved proofs.
    const viewers = [...out.matchAll(/^Viewer: (http:\/\/127\.0\.0\.1:\d+\/viewer\?requestId=[0-9a-f-]{36}&serverName=api\.demo\.test&allowTestAnchor=1)/gm)].map((m) => m[1]!);
    expect(viewers).toHaveLength(2);
    const page = await fetch(viewers[1]!);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    const folder = dirname(savedProof(out, "mpc"));
    for (const mode of ["proxy", "mpc"]) {
      const verified = await runCli(BINARY_CLI, ["verify", "--allow-test-anchor", "--notary-pub-key", `${folder}/prover/notary.pub`, "--proof", savedProof(out, mode)]);
      expect(verified.exitCode).toBe(0);
    }
    // The commands it prints run as printed, in a shell with no `cli` of ours on the PATH.
    const printed = [...out.matchAll(/check it again: (.+)$/gm)].map((m) => m[1]!);
    expect(printed).toHaveLength(2);
    for (const command of printed) {
      const shell = Bun.spawn(["sh", "-c", command], { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } });
      expect(await shell.exited).toBe(0);
      expect(await new Response(shell.stdout).text()).toContain("Proof valid");
    }

    const group = processGroup(demo.pid);
    expect(group.length).toBeGreaterThanOrEqual(2); // the demo and its engine host
    process.kill(-demo.pid, "SIGINT");
    expect(await demo.exited).toBe(0);
    expect(await eventually(() => processGroup(demo.pid), (left) => left.length === 0, 30_000)).toEqual([]);
    expect(existsSync(folder)).toBe(false);
    expect(await fetch(viewers[0]!).then(() => "answered", () => "refused")).toBe("refused");
    expect(demo.stderr()).toContain("demo: SIGINT: stopping");
    // The engine host got the group's SIGINT too: it leaves stopping to the prover (no crash, no replacement).
    expect(demo.stderr()).not.toContain("stopped unexpectedly");
  }, MPC_MS + 60_000);

  test("npm run demo, SIGTERM in the middle of the MPC proof: everything stops, one error line", async () => {
    const demo = startInOwnGroup(["npm", "run", "--silent", "demo"]);
    // Its report ends with the line naming the saved file, written apart from the heading before it.
    await waitUntil("the first proof saved", demo.stdout, (text) => /Saved as \S+\/proxy-proof\.json/.test(text), 120_000, {
      intervalMs: 200,
      hopeless: () => (demo.running() ? undefined : "the demo exited"),
      context: () => demo.stderr().slice(-3000),
    });
    const folder = dirname(savedProof(demo.stdout(), "proxy"));
    process.kill(-demo.pid, "SIGTERM");
    expect(await eventually(() => processGroup(demo.pid), (left) => left.length === 0, 60_000)).toEqual([]);
    expect(await demo.exited).not.toBe(0);
    expect(demo.stdout()).not.toContain("=== Proof 2 of 2");
    expect(demo.stderr()).toContain("error: the demo was stopped before its proofs were made\n");
    expect(existsSync(folder)).toBe(false);
  }, 180_000);
});
