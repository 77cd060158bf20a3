import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useBuiltBinary } from "../../testkit/binary.ts";
import { tempDir } from "../../testkit/env.ts";
import { BINARY_CLI, runCli, startProver } from "../../testkit/prover.ts";
import { SECRET_VALUE, startTarget } from "../../testkit/target.ts";

useBuiltBinary();

const cli = BINARY_CLI;
const read = (path: string) => readFileSync(path, "utf8");

/**
 * What `cli prover start` gets when the one command `cli testca` prints is run as printed, in a shell whose `cli`
 * prints the settings it was given; the shell itself keeps none of them.
 */
async function evaluated(stdout: string): Promise<string[]> {
  const names = ["TLSN_TEST_TRUST_ANCHOR", "PROVER_RESOLVE", "PROVER_ALLOW_PRIVATE_TARGETS", "PROVER_ALLOWED_PORTS"];
  const command = stdout.split("\n").filter((line) => line.startsWith("env "));
  expect(command).toHaveLength(1);
  expect(command[0]).toEndWith(" cli prover start");
  const bin = tempDir("testca-bin");
  writeFileSync(join(bin, "cli"), `#!/bin/sh\n[ "$*" = "prover start" ] || exit 9\nprintf '%s\\n' ${names.map((n) => `"$${n}"`).join(" ")}\n`, { mode: 0o755 });
  const script = `${command[0]}; printf 'left:%s\\n' "$TLSN_TEST_TRUST_ANCHOR"`;
  const shell = Bun.spawn(["sh", "-c", script], { stdout: "pipe", env: { PATH: `${bin}:${process.env.PATH ?? ""}` } });
  const lines = (await new Response(shell.stdout).text()).trimEnd().split("\n");
  expect(await shell.exited).toBe(0);
  expect(lines.pop()).toBe("left:");
  return lines;
}

describe("cli testca (dist/cli)", () => {
  test("writes a test CA and a server certificate, prints the settings; a prover given them proves against a server using them", async () => {
    const dir = join(tempDir("testca"), "ca");
    const first = await runCli(cli, ["testca", "--out", dir, "--name", "Local.Test", "--name", "other.test"]);
    expect(first.stderr).toBe("");
    expect(first.exitCode).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(["ca.key", "ca.pem", "server.key", "server.pem"]);
    for (const key of ["ca.key", "server.key"]) expect(statSync(join(dir, key)).mode & 0o777).toBe(0o600);
    const [leaf, issuer] = read(join(dir, "server.pem")).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n/g)!;
    expect(issuer).toBe(read(join(dir, "ca.pem")));
    const certificate = new X509Certificate(leaf!);
    expect(certificate.subjectAltName).toBe("DNS:local.test, DNS:other.test");
    expect(certificate.ca).toBe(false);
    expect(certificate.checkIssued(new X509Certificate(issuer!))).toBe(true);
    expect(new X509Certificate(issuer!).subject).toBe("OU=GlobalSign ECC Root CA - R4\nO=GlobalSign\nCN=GlobalSign");

    // A server on a free port with that certificate; then its port's settings. The CA is kept: the server's stays valid.
    const target = startTarget({ chainPem: read(join(dir, "server.pem")), leafKeyPem: read(join(dir, "server.key")) });
    const caBefore = read(join(dir, "ca.pem"));
    // Printed as it runs where it is printed: `cli` when that is this binary on the PATH, else the binary's path.
    const installed = tempDir("testca-installed");
    symlinkSync(cli[0]!, join(installed, "cli"));
    const second = await runCli(cli, ["testca", "--out", dir, "--name", "local.test", "--port", String(target.port)], undefined, { PATH: `${installed}:${process.env.PATH ?? ""}` });
    expect(first.stdout).toContain(` ${cli[0]} prover start\n`);
    expect(second.exitCode).toBe(0);
    expect(second.stdout).toStartWith(`# The existing test CA ${join(dir, "ca.pem")}`);
    expect(read(join(dir, "ca.pem"))).toBe(caBefore);
    const settings = await evaluated(second.stdout);
    expect(settings).toEqual([join(dir, "ca.pem"), `local.test:${target.port}:127.0.0.1`, "1", String(target.port)]);

    // Exactly those settings (the testkit's own CA and names replaced), and a proof in proxy mode.
    const [anchor, resolve, allowPrivate, ports] = settings as [string, string, string, string];
    const prover = await startProver(cli, target.port!, { TLSN_TEST_TRUST_ANCHOR: anchor, PROVER_RESOLVE: resolve, PROVER_ALLOW_PRIVATE_TARGETS: allowPrivate, PROVER_ALLOWED_PORTS: ports });
    try {
      const out = join(dir, "..", "proof.json");
      const proved = await runCli(cli, ["prove", "--allow-test-anchor", "--prover", prover.url, "--notary-pub-key", prover.notaryPubPath, "--url", `https://local.test:${target.port}/data`, "--mode", "proxy", "--out", out]);
      expect(proved.stderr).toBe("");
      expect(proved.exitCode).toBe(0);
      expect(JSON.parse(proved.stdout).secret).toBe(SECRET_VALUE);
      const verified = await runCli(cli, ["verify", "--allow-test-anchor", "--notary-pub-key", prover.notaryPubPath, "--proof", out]);
      expect(verified.exitCode).toBe(0);
      expect(verified.stdout).toContain("Server:       local.test");
    } finally {
      expect(await prover.stop()).toBe(0);
      target.stop(true);
    }
  }, 120_000);

  test("refuses a name a certificate cannot carry, a bad port, and a folder whose CA is not usable (--force makes a new one)", async () => {
    const base = tempDir("testca-refusals");
    const ip = await runCli(cli, ["testca", "--out", join(base, "ip"), "--name", "127.0.0.1"]);
    expect(ip.exitCode).toBe(2);
    expect(ip.stderr).toBe('error: "127.0.0.1" is not a DNS name (certificates name hosts by DNS name; TLS clients refuse IP addresses here)\n');
    expect(existsSync(join(base, "ip", "ca.pem"))).toBe(false);
    const port = await runCli(cli, ["testca", "--out", join(base, "port"), "--port", "70000"]);
    expect(port.exitCode).toBe(2);
    expect(port.stderr).toBe("error: --port must be a port number (1-65535)\n");

    const foreign = join(base, "foreign");
    expect((await runCli(cli, ["testca", "--out", foreign])).exitCode).toBe(0);
    // A server certificate where the CA should be: its key is not the CA's.
    writeFileSync(join(foreign, "ca.pem"), read(join(foreign, "server.pem")).split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n");
    const unusable = await runCli(cli, ["testca", "--out", foreign]);
    expect(unusable.exitCode).toBe(2);
    expect(unusable.stderr).toMatch(/^error: .*foreign holds a CA that cannot be used \(TLSN_TEST_TRUST_ANCHOR: the CA subject must be exactly .*\); use --force to make a new one\n$/);
    const forced = await runCli(cli, ["testca", "--out", foreign, "--force"]);
    expect(forced.exitCode).toBe(0);
    expect(forced.stdout).toStartWith("# A new test CA");
  }, 60_000);
});
