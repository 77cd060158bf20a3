/**
 * install.sh against a fake release served on 127.0.0.1, run with `sh` (dash here) under stubbed
 * `uname`/`sysctl` and a PATH holding only the tools each case allows; plus the real linux-x64
 * binary installed the same way, and build-all's pure parts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import {
  TARGETS,
  executableFormat,
  fileNameOf,
  formatSha256Sums,
  buildAll,
  parseArgs,
} from "../../scripts/build-all.ts";
import { clientTarballName } from "../../scripts/pack-client.ts";
import { eventually } from "../../testkit/wait.ts";
import { requireTool, run } from "./support.ts";

const ROOT = resolve(import.meta.dir, "../..");
const INSTALL_SH = join(ROOT, "install.sh");
const DIST = join(ROOT, "dist");
const BUN = process.execPath;
const ASSETS = TARGETS.map(fileNameOf);

let tmp = "";
let caseNo = 0;
let server: ReturnType<typeof Bun.serve> | undefined;
let baseUrl = "";
const requests: { path: string; userAgent: string }[] = [];
/** Paths served from memory/streams instead of the release folder. */
const specialRoutes = new Map<string, () => Response>();
/** Tool folders: each holds symlinks to exactly the host commands a case may use. */
const toolDirs: Record<"curl" | "wget" | "none" | "shasum", string> = { curl: "", wget: "", none: "", shasum: "" };
const CPUINFO = { avx2: "", noAvx2: "" };

const sha256Hex = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex");


/** One folder of the fake release: fake binaries printing "<platform> <release>" and a SHA256SUMS made by sha256sum. */
async function writeRelease(dir: string, release: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const asset of ASSETS) {
    const path = join(dir, asset);
    await writeFile(path, `#!/bin/sh\necho "${asset.slice("cli-".length)} ${release}"\n`);
    await chmod(path, 0o755);
  }
  const sums = run(["sha256sum", ...ASSETS], dir);
  if (sums.code !== 0) throw new Error(sums.stderr);
  await writeFile(join(dir, "SHA256SUMS"), sums.stdout);
}

async function makeToolDir(name: string, tools: string[]): Promise<string> {
  const dir = join(tmp, "tools", name);
  await mkdir(dir, { recursive: true });
  for (const tool of tools) {
    const path = Bun.which(tool);
    if (!path) throw new Error(`host lacks ${tool}`);
    await symlink(path, join(dir, tool));
  }
  return dir;
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tlsproof-install-"));
  const releases = join(tmp, "releases");
  await writeRelease(join(releases, "latest", "download"), "latest");
  await writeRelease(join(releases, "download", "v0.9.0"), "v0.9.0");
  // vcorrupt: the linux-x64 binary changed after its checksum was taken.
  await writeRelease(join(releases, "download", "vcorrupt"), "vcorrupt");
  await writeFile(join(releases, "download", "vcorrupt", "cli-linux-x64"), '#!/bin/sh\necho "tampered"\n');
  // vmissing: SHA256SUMS has every file but linux-x64.
  await writeRelease(join(releases, "download", "vmissing"), "vmissing");
  const missingSums = join(releases, "download", "vmissing", "SHA256SUMS");
  const kept = (await readFile(missingSums, "utf8")).split("\n").filter((l) => !l.endsWith("  cli-linux-x64"));
  await writeFile(missingSums, kept.join("\n"));
  // vtruncated / vstall: valid SHA256SUMS, but the binary download breaks off / hangs half-way.
  for (const name of ["vtruncated", "vstall"]) await writeRelease(join(releases, "download", name), name);

  const base = ["grep", "awk", "cut", "tr", "mktemp", "mkdir", "chmod", "mv", "rm", "cat"];
  toolDirs.curl = await makeToolDir("curl", [...base, "sha256sum", "curl"]);
  toolDirs.wget = await makeToolDir("wget", [...base, "sha256sum", "wget"]);
  toolDirs.none = await makeToolDir("none", [...base, "sha256sum"]);
  toolDirs.shasum = await makeToolDir("shasum", [...base, "shasum", "curl"]);

  CPUINFO.avx2 = join(tmp, "cpuinfo-avx2");
  CPUINFO.noAvx2 = join(tmp, "cpuinfo-noavx2");
  const cpu = (flags: string) =>
    `processor\t: 0\nmodel name\t: Fake CPU with avx2 in its name\nflags\t\t: ${flags}\n\nprocessor\t: 1\nflags\t\t: ${flags}\n`;
  await writeFile(CPUINFO.avx2, cpu("fpu vme sse sse2 avx avx2 bmi2 avx512f"));
  await writeFile(CPUINFO.noAvx2, cpu("fpu vme sse sse2 avx avx512f avx2x avx_vnni"));

  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      requests.push({ path, userAgent: req.headers.get("user-agent") ?? "" });
      const special = specialRoutes.get(path);
      if (special) return special();
      if (!path.startsWith("/releases/") || path.includes("..")) return new Response("not found", { status: 404 });
      const file = Bun.file(join(tmp, path));
      return (await file.exists()) ? new Response(file) : new Response("not found", { status: 404 });
    },
  });
  baseUrl = `http://127.0.0.1:${server.port}/releases`;
});

afterAll(async () => {
  await server?.stop(true);
  if (tmp) await rm(tmp, { recursive: true, force: true });
}, 120_000);

interface InstallCase {
  uname?: readonly [string, string];
  /** What `sysctl -n sysctl.proc_translated` does: fail like an Intel Mac, or print 0/1. */
  sysctl?: "fail" | "0" | "1";
  cpuinfo?: string;
  version?: string;
  tools?: keyof typeof toolDirs;
  args?: string[];
  /** false: leave CLI_INSTALL_DIR unset (default ~/.local/bin). */
  setInstallDir?: boolean;
  installDirOnPath?: boolean;
  /** Run under `script` so that stdout and stderr are a terminal. */
  tty?: boolean;
}

interface InstallResult {
  code: number;
  stdout: string;
  stderr: string;
  /** The folder that install.sh installs into. */
  dir: string;
  home: string;
}

/** Writes the stubs for one case and returns the env for install.sh. */
async function prepare(c: InstallCase): Promise<{ env: Record<string, string>; dir: string; home: string; caseDir: string }> {
  const caseDir = join(tmp, `case-${++caseNo}`);
  const stubs = join(caseDir, "stubs");
  const home = join(caseDir, "home");
  await mkdir(stubs, { recursive: true });
  await mkdir(home, { recursive: true });
  const [s, m] = c.uname ?? ["Linux", "x86_64"];
  await writeFile(
    join(stubs, "uname"),
    `#!/bin/sh\ncase "$1" in -s) echo '${s}' ;; -m) echo '${m}' ;; *) echo '${s}' ;; esac\n`,
  );
  await chmod(join(stubs, "uname"), 0o755);
  const sysctl = c.sysctl ?? "fail";
  await writeFile(
    join(stubs, "sysctl"),
    sysctl === "fail"
      ? `#!/bin/sh\necho "sysctl: unknown oid '$2'" >&2\nexit 1\n`
      : `#!/bin/sh\n[ "$1 $2" = "-n sysctl.proc_translated" ] || exit 2\necho ${sysctl}\n`,
  );
  await chmod(join(stubs, "sysctl"), 0o755);
  const dir = c.setInstallDir === false ? join(home, ".local", "bin") : join(caseDir, "install dir", "bin");
  const path = [stubs, toolDirs[c.tools ?? "curl"], ...(c.installDirOnPath ? [dir] : [])].join(":");
  const env: Record<string, string> = {
    PATH: path,
    HOME: home,
    CLI_DOWNLOAD_URL: baseUrl,
    CLI_CPUINFO: c.cpuinfo ?? CPUINFO.avx2,
  };
  if (c.setInstallDir !== false) env.CLI_INSTALL_DIR = dir;
  if (c.version !== undefined) env.CLI_VERSION = c.version;
  return { env, dir, home, caseDir };
}

async function install(c: InstallCase = {}): Promise<InstallResult> {
  const { env, dir, home, caseDir } = await prepare(c);
  const sh = ["/bin/sh", INSTALL_SH, ...(c.args ?? [])];
  // `script` gives the installer a terminal; it needs a PATH for itself, so it runs sh via env -i.
  const cmd = c.tty
    ? ["script", "-qefc", ["env", "-i", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...sh].map(shellQuote).join(" "), "/dev/null"]
    : sh;
  const proc = Bun.spawn(cmd, { cwd: caseDir, env: c.tty ? { PATH: process.env.PATH ?? "/usr/bin:/bin" } : env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr, dir, home };
}

const shellQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

async function listDir(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch {
    return [];
  }
}

async function installedVersion(dir: string): Promise<string> {
  const r = run([join(dir, "cli"), "--version"], dir);
  expect(r.code).toBe(0);
  return r.stdout.trim();
}

describe("install.sh picks the build for the platform", () => {
  const cases: { name: string; c: InstallCase; expect: string }[] = [
    { name: "Linux x86_64 with AVX2", c: { uname: ["Linux", "x86_64"], cpuinfo: "avx2" }, expect: "linux-x64" },
    { name: "Linux x86_64 without AVX2", c: { uname: ["Linux", "x86_64"], cpuinfo: "noAvx2" }, expect: "linux-x64-baseline" },
    { name: "Linux x86_64, cpuinfo unreadable", c: { uname: ["Linux", "x86_64"], cpuinfo: "/nonexistent/cpuinfo" }, expect: "linux-x64-baseline" },
    { name: "Linux aarch64", c: { uname: ["Linux", "aarch64"], cpuinfo: "noAvx2" }, expect: "linux-arm64" },
    { name: "Linux arm64", c: { uname: ["Linux", "arm64"] }, expect: "linux-arm64" },
    { name: "macOS Intel (no proc_translated)", c: { uname: ["Darwin", "x86_64"], sysctl: "fail", cpuinfo: "noAvx2" }, expect: "darwin-x64" },
    { name: "macOS Intel (proc_translated 0)", c: { uname: ["Darwin", "x86_64"], sysctl: "0" }, expect: "darwin-x64" },
    { name: "macOS arm64 under Rosetta", c: { uname: ["Darwin", "x86_64"], sysctl: "1" }, expect: "darwin-arm64" },
    { name: "macOS arm64 native", c: { uname: ["Darwin", "arm64"], sysctl: "fail" }, expect: "darwin-arm64" },
  ];
  for (const { name, c, expect: platform } of cases) {
    test(`${name} -> cli-${platform}`, async () => {
      const cpuinfo = c.cpuinfo === "avx2" ? CPUINFO.avx2 : c.cpuinfo === "noAvx2" ? CPUINFO.noAvx2 : c.cpuinfo;
      const before = requests.length;
      const r = await install({ ...c, cpuinfo });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(await listDir(r.dir)).toEqual(["cli"]);
      expect(await installedVersion(r.dir)).toBe(`${platform} latest`);
      expect((await stat(join(r.dir, "cli"))).mode & 0o777).toBe(0o755);
      expect(r.stdout).toContain(`Installed cli ${platform} latest to ${r.dir}/cli`);
      expect(r.stdout).not.toContain("\x1b");
      expect(requests.slice(before).map((q) => q.path)).toEqual([
        "/releases/latest/download/SHA256SUMS",
        `/releases/latest/download/cli-${platform}`,
      ]);
    });
  }
});

describe("install.sh refuses unsupported platforms", () => {
  for (const [s, m, word] of [
    ["FreeBSD", "amd64", "FreeBSD"],
    ["Linux", "i686", "i686"],
    ["Linux", "armv7l", "armv7l"],
    ["MINGW64_NT-10.0", "x86_64", "MINGW64_NT-10.0"],
  ] as const) {
    test(`${s} ${m}`, async () => {
      const before = requests.length;
      const r = await install({ uname: [s, m] });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(new RegExp(`^error: unsupported .*${word}`));
      expect(requests.length).toBe(before);
      expect(await listDir(r.dir)).toEqual([]);
    });
  }
});

describe("install.sh checks what it downloads", () => {
  test("a corrupted binary is refused and an installed cli is left as it was", async () => {
    const r0 = await install({ version: "vcorrupt" });
    expect(r0.code).toBe(1);
    expect(r0.stderr).toMatch(/^error: checksum mismatch for cli-linux-x64 \(expected [0-9a-f]{64}, got [0-9a-f]{64}\); refusing to install\n$/);
    expect(r0.stdout).not.toContain("Installed");
    expect(await listDir(r0.dir)).toEqual([]);

    // Over an existing install: the old binary stays, byte for byte.
    const good = await install({ version: "0.9.0" });
    expect(good.code).toBe(0);
    const oldBytes = await readFile(join(good.dir, "cli"));
    const { env } = await prepare({ version: "vcorrupt" });
    env.CLI_INSTALL_DIR = good.dir;
    const proc = Bun.spawn(["/bin/sh", INSTALL_SH], { env, stdout: "pipe", stderr: "pipe" });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(1);
    expect(stderr).toContain("checksum mismatch");
    expect(await listDir(good.dir)).toEqual(["cli"]);
    expect(await readFile(join(good.dir, "cli"))).toEqual(oldBytes);
    expect(await installedVersion(good.dir)).toBe("linux-x64 v0.9.0");
  });

  test("a missing SHA256SUMS entry is refused before the binary is fetched", async () => {
    const before = requests.length;
    const r = await install({ version: "vmissing" });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: SHA256SUMS has no entry for cli-linux-x64; refusing to install\n");
    expect(await listDir(r.dir)).toEqual([]);
    expect(requests.slice(before).map((q) => q.path)).toEqual(["/releases/download/vmissing/SHA256SUMS"]);
    // The other platforms of that release still install.
    const arm = await install({ version: "vmissing", uname: ["Linux", "aarch64"] });
    expect(arm.code).toBe(0);
    expect(await installedVersion(arm.dir)).toBe("linux-arm64 vmissing");
  });

  test("a missing release (404) fails with one line", async () => {
    const r = await install({ version: "9.9.9" });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: could not download ${baseUrl}/download/v9.9.9/SHA256SUMS\n`);
    expect(await listDir(r.dir)).toEqual([]);
  });

  test("a download cut off half-way leaves nothing behind", async () => {
    // A raw HTTP server that promises 200000 bytes, sends 65536, and hangs up.
    const raw = createServer((socket) => {
      socket.once("data", () => {
        const head = "HTTP/1.1 200 OK\r\nContent-Length: 200000\r\nConnection: close\r\n\r\n";
        socket.end(Buffer.concat([Buffer.from(head), Buffer.alloc(65536, 0x23)]));
      });
    });
    await new Promise<void>((res) => raw.listen(0, "127.0.0.1", res));
    const port = (raw.address() as AddressInfo).port;
    specialRoutes.set("/releases/download/vtruncated/cli-linux-x64", () =>
      Response.redirect(`http://127.0.0.1:${port}/cli-linux-x64`, 302),
    );
    try {
      const r = await install({ version: "vtruncated", tools: "curl" });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`error: could not download ${baseUrl}/download/vtruncated/cli-linux-x64\n`);
      expect(await listDir(r.dir)).toEqual([]);
    } finally {
      raw.close();
    }
  });

  test("Ctrl-C during the download removes the temporary files", async () => {
    let started: () => void = () => {};
    const downloading = new Promise<void>((res) => (started = res));
    specialRoutes.set("/releases/download/vstall/cli-linux-x64", () => {
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (!sent) {
            sent = true;
            controller.enqueue(new Uint8Array(64 * 1024).fill(0x23));
            started();
            return;
          }
          await Bun.sleep(200); // keeps the connection open, sending nothing more
        },
      });
      return new Response(body);
    });
    const { env, dir } = await prepare({ version: "vstall" });
    // Its own process group, as a terminal's foreground job is, so Ctrl-C reaches sh and curl alike.
    const setsid = Bun.which("setsid");
    if (!setsid) throw new Error("setsid (util-linux) is missing");
    const proc = Bun.spawn([setsid, "/bin/sh", INSTALL_SH], { env, stdout: "pipe", stderr: "pipe" });
    await downloading;
    const partial = await eventually(async () => (await listDir(dir)).filter((f) => f.startsWith(".cli.")), (files) => files.length > 0, 10_000);
    expect(partial).toHaveLength(1); // the half-written temp file exists while downloading
    const pgrp = Number((await readFile(`/proc/${proc.pid}/stat`, "utf8")).split(") ")[1]?.split(" ")[2]);
    expect(pgrp).toBeGreaterThan(1);
    process.kill(-pgrp, "SIGINT");
    const code = await proc.exited;
    expect(code).not.toBe(0);
    expect(await listDir(dir)).toEqual([]);
  });
});

describe("install.sh tools and options", () => {
  test("runs piped into sh, as in curl ... | sh and curl ... | sh -s -- -q", async () => {
    const script = await readFile(INSTALL_SH);
    for (const args of [[], ["-s", "--", "-q"]]) {
      const { env, dir, caseDir } = await prepare({ uname: ["Linux", "aarch64"] });
      const proc = Bun.spawn(["/bin/sh", ...args], { cwd: caseDir, env, stdin: script, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      if (args.length) expect(stdout).toBe("");
      else expect(stdout).toContain("Installed cli linux-arm64 latest");
      expect(await installedVersion(dir)).toBe("linux-arm64 latest");
    }
  });

  test("downloads with curl when present", async () => {
    const before = requests.length;
    const r = await install({ tools: "curl" });
    expect(r.code).toBe(0);
    const agents = requests.slice(before).map((q) => q.userAgent);
    expect(agents).toHaveLength(2);
    for (const ua of agents) expect(ua).toMatch(/^curl\//);
  });

  test("downloads with wget when there is no curl", async () => {
    const before = requests.length;
    const r = await install({ tools: "wget" });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(await installedVersion(r.dir)).toBe("linux-x64 latest");
    const agents = requests.slice(before).map((q) => q.userAgent);
    expect(agents).toHaveLength(2);
    for (const ua of agents) expect(ua).toMatch(/^Wget\//);
  });

  test("neither curl nor wget: one clear error", async () => {
    const r = await install({ tools: "none" });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: neither curl nor wget is installed; install one of them and try again\n");
    expect(await listDir(r.dir)).toEqual([]);
  });

  test("checks with shasum when there is no sha256sum, and still refuses a corrupted binary", async () => {
    const ok = await install({ tools: "shasum", uname: ["Darwin", "arm64"] });
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(await installedVersion(ok.dir)).toBe("darwin-arm64 latest");
    const bad = await install({ tools: "shasum", version: "vcorrupt" });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("checksum mismatch");
    expect(await listDir(bad.dir)).toEqual([]);
  });

  test("CLI_VERSION picks a release, with or without the v", async () => {
    for (const version of ["0.9.0", "v0.9.0"]) {
      const r = await install({ version, uname: ["Linux", "aarch64"] });
      expect(r.code).toBe(0);
      expect(await installedVersion(r.dir)).toBe("linux-arm64 v0.9.0");
    }
  });

  test("-q prints nothing and still installs", async () => {
    for (const args of [["-q"], ["--quiet"]]) {
      const r = await install({ args });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe("");
      expect(await installedVersion(r.dir)).toBe("linux-x64 latest");
    }
  });

  test("-q does not hide errors", async () => {
    const r = await install({ args: ["-q"], version: "vcorrupt" });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("checksum mismatch");
  });

  test("--help explains and installs nothing", async () => {
    for (const args of [["--help"], ["-h"]]) {
      const before = requests.length;
      const r = await install({ args });
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      for (const word of ["Usage:", "-q", "CLI_VERSION", "CLI_INSTALL_DIR", "CLI_DOWNLOAD_URL", "SHA256SUMS", "~/.local/bin"]) {
        expect(r.stdout).toContain(word);
      }
      expect(requests.length).toBe(before);
      expect(await listDir(r.dir)).toEqual([]);
    }
  });

  test("an unknown option is an error", async () => {
    const r = await install({ args: ["--yes"] });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: unknown option: --yes (see --help)\n");
  });

  test("defaults to ~/.local/bin and tells how to put it on PATH", async () => {
    const r = await install({ setInstallDir: false });
    expect(r.code).toBe(0);
    expect(r.dir).toBe(join(r.home, ".local", "bin"));
    expect(await installedVersion(r.dir)).toBe("linux-x64 latest");
    expect(r.stdout).toContain(`${r.dir} is not on your PATH`);
    expect(r.stdout).toContain(`export PATH="${r.dir}:$PATH"`);
  });

  test("no PATH advice when the folder is on PATH", async () => {
    const r = await install({ installDirOnPath: true });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("PATH");
  });

  test("colours only on a terminal", async () => {
    const r = await install({ tty: true });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("\x1b[1mcli linux-x64 latest\x1b[0m");
    const plain = await install({});
    expect(plain.stdout).not.toContain("\x1b");
    const err = await install({ tty: true, version: "vcorrupt" });
    expect(err.code).toBe(1);
    expect(err.stdout).toContain("\x1b[31merror:\x1b[0m checksum mismatch");
  });
});

describe("install.sh source", () => {
  test("shellcheck passes (POSIX sh)", () => {
    const shellcheck = requireTool("shellcheck", "shellcheck");
    const r = run([shellcheck, "--shell=sh", "--severity=style", INSTALL_SH], ROOT);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  }, 300_000);

  test("dash parses it and it has set -eu", async () => {
    expect(run(["/bin/sh", "-n", INSTALL_SH], ROOT).code).toBe(0);
    const text = await readFile(INSTALL_SH, "utf8");
    expect(text.startsWith("#!/bin/sh\n")).toBe(true);
    expect(text).toMatch(/^set -eu$/m);
  });
});

describe("build-all helpers", () => {
  test("formatSha256Sums matches sha256sum byte for byte and sha256sum -c accepts it", async () => {
    const dir = join(tmp, "sums");
    await mkdir(dir, { recursive: true });
    const files: Record<string, string> = { "cli-linux-x64": "one\n", "cli-darwin-arm64": "two", "cli-b": "" };
    for (const [name, data] of Object.entries(files)) await writeFile(join(dir, name), data);
    const text = formatSha256Sums(Object.entries(files).map(([name, data]) => ({ name, sha256: sha256Hex(data) })));
    const names = Object.keys(files).sort();
    expect(text).toBe(run(["sha256sum", ...names], dir).stdout);
    expect(text.split("\n")[0]).toBe(`${sha256Hex("")}  cli-b`);
    await writeFile(join(dir, "SHA256SUMS"), text);
    expect(run(["sha256sum", "-c", "--strict", "SHA256SUMS"], dir).code).toBe(0);
    await writeFile(join(dir, "cli-b"), "changed");
    expect(run(["sha256sum", "-c", "SHA256SUMS"], dir).code).toBe(1);
  });

  test("formatSha256Sums rejects what install.sh could not read", () => {
    const ok = sha256Hex("x");
    expect(formatSha256Sums([])).toBe("");
    expect(() => formatSha256Sums([{ name: "a", sha256: ok.toUpperCase() }])).toThrow(/hex digest/);
    expect(() => formatSha256Sums([{ name: "a", sha256: ok.slice(1) }])).toThrow(/hex digest/);
    expect(() => formatSha256Sums([{ name: "a b", sha256: ok }])).toThrow(/file name/);
    expect(() => formatSha256Sums([{ name: "dist/a", sha256: ok }])).toThrow(/file name/);
    expect(() => formatSha256Sums([{ name: "a", sha256: ok }, { name: "a", sha256: ok }])).toThrow(/duplicate/);
  });

  test("targets: the five release builds, named as install.sh asks for them", () => {
    expect(ASSETS).toEqual(["cli-linux-x64", "cli-linux-x64-baseline", "cli-linux-arm64", "cli-darwin-x64", "cli-darwin-arm64"]);
    expect(TARGETS.map((t) => t.bunTarget)).toEqual([
      "bun-linux-x64",
      "bun-linux-x64-baseline",
      "bun-linux-arm64",
      "bun-darwin-x64",
      "bun-darwin-arm64",
    ]);
    const all = parseArgs([], ROOT);
    expect(all.targets).toEqual([...TARGETS]);
    expect(all.outdir).toBe(DIST);
    expect(all.buildScript).toBe(join(ROOT, "scripts", "build.ts"));
    expect(parseArgs(["--targets", "linux-arm64,darwin-x64"], ROOT).targets.map(fileNameOf)).toEqual(["cli-linux-arm64", "cli-darwin-x64"]);
    expect(parseArgs(["--targets=linux-x64", "--outdir=/tmp/x"], ROOT)).toMatchObject({ outdir: "/tmp/x", targets: [TARGETS[0]] });
    expect(() => parseArgs(["--targets", "windows-x64"], ROOT)).toThrow(/unknown target/);
    expect(() => parseArgs(["--fast"], ROOT)).toThrow(/unknown argument/);
    expect(() => parseArgs(["--outdir"], ROOT)).toThrow(/needs a value/);
  });

  test("executableFormat rejects what is not one of our executables", () => {
    expect(executableFormat(new TextEncoder().encode("#!/bin/sh\necho hello world\n"))).toBeUndefined();
    expect(executableFormat(new Uint8Array(8))).toBeUndefined();
    const elfObject = new Uint8Array(64);
    elfObject.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]);
    elfObject.set([1, 0, 0x3e, 0], 16); // ET_REL, x86-64: an object file, not an executable
    expect(executableFormat(elfObject)).toBeUndefined();
    elfObject.set([3, 0], 16);
    expect(executableFormat(elfObject)).toBe("ELF x86-64");
  });

  test(
    "buildAll runs the single-target build per target, checks formats, writes SHA256SUMS",
    async () => {
      // Stand-in for scripts/build.ts with the same contract: a real cross-compile of a tiny probe.
      const dir = join(tmp, "build-all");
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "probe.ts"), `console.log(process.argv.includes("--version") ? ${JSON.stringify(pkg.version)} : "probe");\n`);
      const fakeBuild = (ignoreTarget: boolean) => `
        const argv = Bun.argv.slice(2);
        const target = argv[argv.indexOf("--target") + 1];
        const outfile = argv[argv.indexOf("--outfile") + 1];
        const cmd = [process.execPath, "build", "--compile", ${JSON.stringify(join(dir, "probe.ts"))}, "--outfile", outfile];
        if (!${ignoreTarget}) cmd.push("--target=" + target);
        process.exit(Bun.spawnSync(cmd, { stdout: "ignore", stderr: "inherit" }).exitCode ?? 1);
      `;
      await writeFile(join(dir, "build.ts"), fakeBuild(false));
      await writeFile(join(dir, "build-host-only.ts"), fakeBuild(true));
      const lines: string[] = [];
      const outdir = join(dir, "dist");
      // This host's platform only: other platforms need Bun's runtimes for them (the release check builds those).
      const host = TARGETS.find((t) => t.platform === process.platform && t.arch === process.arch)!;
      const targets = parseArgs(["--targets", host.name], ROOT).targets;
      const entries = await buildAll({ targets, outdir, buildScript: join(dir, "build.ts"), cwd: dir, log: (l) => lines.push(l) });
      expect(entries.map((e) => e.name)).toEqual([fileNameOf(host), clientTarballName()]);
      expect((await listDir(outdir)).sort()).toEqual(["SHA256SUMS", fileNameOf(host), clientTarballName()].sort());
      const check = run(["sha256sum", "-c", "--strict", "SHA256SUMS"], outdir);
      expect(check.stdout.split("\n").filter(Boolean).sort()).toEqual([`${fileNameOf(host)}: OK`, `${clientTarballName()}: OK`].sort());
      expect(check.code).toBe(0);
      expect(lines.some((l) => l.includes(`${fileNameOf(host)} ${host.format}`))).toBe(true);

      // A build that ignores --target yields a host binary: refused, and no SHA256SUMS is left.
      const bad = buildAll({
        targets: parseArgs(["--targets", "linux-arm64"], ROOT).targets,
        outdir,
        buildScript: join(dir, "build-host-only.ts"),
        cwd: dir,
        log: () => {},
      });
      await expect(bad).rejects.toThrow("cli-linux-arm64 is ELF x86-64, expected ELF aarch64");
      expect(await Bun.file(join(outdir, "SHA256SUMS")).exists()).toBe(false);
      await rm(outdir, { recursive: true });
    },
    300_000,
  );
});

/**
 * The real build of the asset install.sh picks on this host (`cli-linux-x64`, or `-baseline` without AVX2),
 * compiled now from the current source into the test's folder: never a stale one from dist/.
 */
function freshLinuxBinary(): { asset: string; path: string } {
  const avx2 = /^flags\s*:.*\savx2(\s|$)/m.test(readFileSync("/proc/cpuinfo", "utf8"));
  const target = TARGETS.find((t) => t.name === (avx2 ? "linux-x64" : "linux-x64-baseline"))!;
  const path = join(tmp, "fresh", fileNameOf(target));
  const r = run([BUN, join(ROOT, "scripts", "build.ts"), "--target", target.bunTarget, "--outfile", path], ROOT);
  if (r.code !== 0) throw new Error(`scripts/build.ts failed (${r.code}):\n${r.stdout}${r.stderr}`);
  return { asset: fileNameOf(target), path };
}

const onLinuxX64 = process.platform === "linux" && process.arch === "x64";

describe("the real binary", () => {
  test.skipIf(!onLinuxX64)(
    "installs through install.sh, prints package.json's version, and ignores .env and bunfig.toml in its cwd",
    async () => {
      const binary = freshLinuxBinary();
      // A release folder holding the real build of the one asset this host needs.
      const release = "/real/latest/download";
      const served: Record<string, string> = { [binary.asset]: binary.path };
      const entries: { name: string; sha256: string }[] = [];
      for (const [name, path] of Object.entries(served)) {
        const hash = run(["sha256sum", path], ROOT).stdout.split(" ")[0] ?? "";
        entries.push({ name, sha256: hash });
        specialRoutes.set(`${release}/${name}`, () => new Response(Bun.file(path)));
      }
      const sums = formatSha256Sums(entries);
      specialRoutes.set(`${release}/SHA256SUMS`, () => new Response(sums));

      // Real uname and /proc/cpuinfo: this host decides.
      const caseDir = join(tmp, "real");
      const dir = join(caseDir, "bin");
      await mkdir(caseDir, { recursive: true });
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        HOME: caseDir,
        CLI_DOWNLOAD_URL: `http://127.0.0.1:${server?.port}/real`,
        CLI_INSTALL_DIR: dir,
      };
      const proc = Bun.spawn(["/bin/sh", INSTALL_SH], { cwd: caseDir, env, stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect(stderr).toBe("");
      expect(code).toBe(0);
      expect(await listDir(dir)).toEqual(["cli"]);
      const cli = join(dir, "cli");
      const version = run([cli, "--version"], caseDir, { PATH: env.PATH ?? "" });
      expect(version.code).toBe(0);
      expect(version.stderr).toBe("");
      const printed = version.stdout.trim();
      expect(printed === pkg.version || printed.startsWith(`${pkg.version} (`)).toBe(true);
      expect(stdout).toContain(`Installed cli ${printed} to ${cli}`);

      // A folder with a bunfig.toml whose preload would print and exit 3, and a .env turning colours off.
      const hostile = join(caseDir, "hostile");
      await mkdir(hostile, { recursive: true });
      await writeFile(join(hostile, "bunfig.toml"), 'preload = ["./preload.ts"]\n');
      await writeFile(join(hostile, "preload.ts"), 'console.log("PRELOADED"); process.exit(3);\n');
      await writeFile(join(hostile, ".env"), "NO_COLOR=1\nTLSPROOF_DOTENV_LOADED=1\n");
      const clean = join(caseDir, "clean");
      await mkdir(clean, { recursive: true });
      const cleanEnv = { PATH: env.PATH ?? "", HOME: caseDir };

      // Control: a binary compiled with Bun's defaults does fall for this folder.
      await writeFile(join(caseDir, "probe.ts"), "console.log(process.env.TLSPROOF_DOTENV_LOADED ?? 'clean');\n");
      const probe = join(caseDir, "probe");
      expect(run([BUN, "build", "--compile", "probe.ts", "--outfile", probe], caseDir).code).toBe(0);
      const fooled = run([probe], hostile, cleanEnv);
      expect(fooled.stdout).toBe("PRELOADED\n");
      expect(fooled.code).toBe(3);
      await rm(probe);

      const versionHostile = run([cli, "--version"], hostile, cleanEnv);
      expect(versionHostile).toEqual(run([cli, "--version"], clean, cleanEnv));
      expect(versionHostile).toEqual({ code: 0, stdout: `${printed}\n`, stderr: "" });

      // Help on a terminal is coloured unless NO_COLOR=1: the .env's NO_COLOR must not reach the binary.
      // `script` gives the binary a terminal (help written into a pipe is never coloured).
      const helpOnTerminal = (cwd: string, extra: Record<string, string> = {}) =>
        run([requireTool("script", "bsdutils"), "-qec", `${cli} --help`, "/dev/null"], cwd, { ...cleanEnv, ...extra });
      const helpClean = helpOnTerminal(clean);
      expect(helpClean.code).toBe(0);
      expect(helpClean.stdout).toContain("\x1b[");
      const helpNoColor = helpOnTerminal(clean, { NO_COLOR: "1" });
      expect(helpNoColor.stdout).not.toContain("\x1b["); // the probe is sensitive to NO_COLOR
      expect(helpOnTerminal(hostile)).toEqual(helpClean);
    },
    400_000,
  );
});
