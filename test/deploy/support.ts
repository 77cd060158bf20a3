/**
 * For the tests of deploy/: its env file read as systemd would, and nginx running deploy/nginx/tlsproof.conf
 * rendered as envsubst would, in the foreground under a scratch folder. nginx comes from .ci/debian-packages
 * (tests install nothing).
 */
import type { Subprocess } from "bun";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isRunning, processTree } from "../../testkit/process.ts";
import { REPO } from "../../testkit/prover.ts";
import { eventually } from "../../testkit/wait.ts";

export const DEPLOY = join(REPO, "deploy");

/** KEY=VALUE lines of an env file (comments and blank lines skipped). */
export function readEnvFile(path: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (match) env[match[1]!] = match[2]!;
  }
  return env;
}

const NGINX = Bun.which("nginx", { PATH: `${process.env.PATH ?? ""}:/usr/sbin:/sbin` });
/** Why nginx tests cannot run here, if they cannot. */
export const nginxMissing = NGINX ? undefined : "nginx is not installed (.ci/debian-packages lists it; .ci/run installs it)";

export interface Nginx {
  url: string;
  process: Subprocess;
  log(): string;
}

/** Renders deploy/'s nginx config as envsubst would and runs nginx on it, in the foreground, under `dir`. */
export async function startNginx(dir: string, values: { LISTEN: string; PROVER_A: string; PROVER_B: string }): Promise<Nginx> {
  const template = readFileSync(join(DEPLOY, "nginx", "tlsproof.conf"), "utf8");
  writeFileSync(join(dir, "tlsproof.conf"), template.replace(/\$\{(LISTEN|PROVER_A|PROVER_B)\}/g, (_, name: keyof typeof values) => values[name]));
  for (const temp of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) {
    mkdirSync(join(dir, temp), { recursive: true });
    // Workers may run as another user than the master (root): they write here.
    chmodSync(join(dir, temp), 0o777);
  }
  // What a distribution's nginx.conf provides around a conf.d include, with every path under `dir`.
  writeFileSync(
    join(dir, "nginx.conf"),
    [
      `pid ${dir}/nginx.pid;`,
      "worker_processes 1;",
      "events { worker_connections 512; }",
      "http {",
      `  access_log ${dir}/access.log;`,
      ...["body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t === "body" ? "client_body" : t}_temp_path ${dir}/${t};`),
      `  include ${dir}/tlsproof.conf;`,
      "}",
      "",
    ].join("\n"),
  );
  const child = Bun.spawn([NGINX!, "-p", dir, "-e", `${dir}/error.log`, "-c", `${dir}/nginx.conf`, "-g", "daemon off;"], { stdout: "ignore", stderr: "pipe" });
  const log = () => {
    try {
      return readFileSync(`${dir}/error.log`, "utf8");
    } catch {
      return "";
    }
  };
  const url = `http://${values.LISTEN}`;
  const health = await eventually(
    () => fetch(`${url}/healthcheck`).then((r) => r.text(), () => ""),
    (text) => text === "Ok" || child.exitCode !== null,
    30_000,
  );
  if (health !== "Ok") throw new Error(`nginx did not start: ${log()} ${await new Response(child.stderr).text()}`);
  return { url, process: child, log };
}

/** Ends a process and its children (nginx's workers, a prover's engine hosts) and waits until none is left. */
export async function endTree(child: Subprocess, signal: "SIGTERM" | "SIGKILL"): Promise<void> {
  const members = child.exitCode === null ? processTree(child.pid) : [];
  child.kill(signal);
  // nginx's master stops its workers on SIGTERM; a child whose parent was killed outright is killed here.
  const exited = await Promise.race([child.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
  if (!exited) child.kill("SIGKILL");
  await child.exited;
  for (const pid of members.slice(1)) if (isRunning(pid)) process.kill(pid, "SIGKILL");
  await eventually(() => members.filter(isRunning), (left) => left.length === 0, 10_000);
}
