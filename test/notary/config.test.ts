import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { AppError } from "../../src/core/errors.ts";
import { loadNotaryConfig, type NotaryConfig, parseNotaryConfig } from "../../src/notary/config.ts";
import { loadWhitelist } from "../../src/notary/whitelist.ts";
import { tempDir } from "../proof/fixtures.ts";

function writeConfig(yaml: string): string {
  const dir = join(tempDir(), "etc");
  mkdirSync(dir);
  const path = join(dir, "notary.yaml");
  writeFileSync(path, yaml);
  return path;
}

function failure(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected an AppError");
}

describe("notary config", () => {
  test("an empty file means every notary-server default; relative defaults anchor at the config's folder", () => {
    const path = writeConfig("");
    const folder = join(path, "..");
    const expected: NotaryConfig = {
      listen: { host: "0.0.0.0", port: 7047 },
      sessions: { concurrency: 32, maxSentData: 4096, maxRecvData: 16384, timeoutMs: 1_800_000, connectTimeoutMs: 30_000 },
      key: { privateKeyPath: null, signatureAlgorithm: "secp256k1" },
      tls: { enabled: false, privateKeyPath: null, certificatePath: null },
      log: { level: "DEBUG", format: "COMPACT" },
      auth: { enabled: false, whitelistPath: join(folder, "whitelist.csv") },
      proxy: null,
      // No key file: a key per start, and its ledger in memory.
      ledger: { kind: "memory" },
      process: { threads: cpus().length, shutdownGraceMs: 30_000, testTrustAnchorPath: undefined },
    };
    expect(loadNotaryConfig(path)).toEqual(expected);
    const emptyMapping = writeConfig("{}\n");
    expect(loadNotaryConfig(emptyMapping)).toEqual({ ...expected, auth: { enabled: false, whitelistPath: join(emptyMapping, "..", "whitelist.csv") } });
    const { process: _, ...fromYaml } = expected;
    expect(parseNotaryConfig({ tls: null, log: null }, "/srv")).toEqual({ ...fromYaml, auth: { enabled: false, whitelistPath: "/srv/whitelist.csv" } });
  });

  test("a full config, in notary-server's own layout", () => {
    const path = writeConfig(`
host: "127.0.0.1"
port: 8047
concurrency: 4
notarization:
  max_sent_data: 8192
  max_recv_data: 65536
  timeout: 60
  connect_timeout: 5
  private_key_path: "./keys/notary.key"
  signature_algorithm: secp256r1
tls:
  enabled: true
  private_key_path: /etc/tls/key.pem
  certificate_path: ../tls/cert.pem
log:
  level: info
  format: json
auth:
  enabled: true
  whitelist: lists/keys.csv
proxy:
  enabled: true
  allowed_hosts: [api.example.com, "*.example.org"]
  allowed_ports: [443]
  allow_private_targets: true
  resolve: ["api.example.com:443:10.0.0.7"]
  max_recv_data: 1048576
  session_timeout: 20
  idle_timeout: 4
  connect_timeout: 2
  attestation_window: 3
  max_hidden_span: 512
`);
    const folder = join(path, "..");
    // A test anchor on a notary serving TLS is allowed only when said so (src/core/test-anchor-exposure.ts).
    const env = { NOTARY_THREADS: "3", NOTARY_SHUTDOWN_GRACE_S: "0", TLSN_TEST_TRUST_ANCHOR: "/tmp/ca.pem", TLSN_TEST_TRUST_ANCHOR_EXPOSED: "1", PROVER_PORT: "ignored" };
    expect(loadNotaryConfig(path, env)).toEqual({
      listen: { host: "127.0.0.1", port: 8047 },
      sessions: { concurrency: 4, maxSentData: 8192, maxRecvData: 65536, timeoutMs: 60_000, connectTimeoutMs: 5_000 },
      key: { privateKeyPath: join(folder, "keys/notary.key"), signatureAlgorithm: "secp256r1" },
      tls: { enabled: true, privateKeyPath: "/etc/tls/key.pem", certificatePath: join(folder, "../tls/cert.pem") },
      log: { level: "INFO", format: "JSON" },
      auth: { enabled: true, whitelistPath: join(folder, "lists/keys.csv") },
      // Beside the key file.
      ledger: { kind: "sqlite", path: join(folder, "keys/notary-ledger.sqlite") },
      proxy: {
        policy: {
          allowPrivateTargets: true,
          resolve: new Map([["api.example.com:443", "10.0.0.7"]]),
          allowedHosts: ["api.example.com", "*.example.org"],
          allowedPorts: [443],
          settingNames: { hosts: "the notary's proxy.allowed_hosts", ports: "the notary's proxy.allowed_ports" },
        },
        maxSentData: 1024 * 1024,
        maxRecvData: 1048576,
        sessionTimeoutMs: 20_000,
        idleTimeoutMs: 4_000,
        connectTimeoutMs: 2_000,
        // Half the places, rounded up.
        maxPendingConnects: 2,
        attestationWindowMs: 3000,
        maxHiddenSpanBytes: 512,
      },
      process: { threads: 3, shutdownGraceMs: 0, testTrustAnchorPath: "/tmp/ca.pem" },
    });
  });

  test.each([
    ["port: abc", 'notary config: port: expected a port number, got "abc"'],
    ["port: 70000", "notary config: port: expected a port number (0-65535), got 70000"],
    ["concurrency: 0", "notary config: concurrency: expected a positive integer, got 0"],
    ["notarization:\n  max_sent_data: abc", 'notary config: notarization.max_sent_data: expected a positive integer, got "abc"'],
    ["notarization:\n  max_recv_data: 1.5", "notary config: notarization.max_recv_data: expected a positive integer, got 1.5"],
    ["notarization:\n  timeout: -1", "notary config: notarization.timeout: expected a positive integer, got -1"],
    ["notarization:\n  foo: 1", 'notary config: unknown key "notarization.foo"'],
    ["notarization:\n  signature_algorithm: ed25519", 'notary config: notarization.signature_algorithm: expected secp256k1 or secp256r1, got "ed25519"'],
    ["notarization:\n  private_key_path: 5", "notary config: notarization.private_key_path: expected a file path, got 5"],
    ["proxy:\n  allowed_ports: [99999]", "notary config: proxy.allowed_ports[0]: expected a port number (0-65535), got 99999"],
    ["proxy:\n  enabled: true\n  open: true\n  resolve: [nonsense]", 'proxy.resolve: "nonsense" is not host:port:address'],
    ["proxy:\n  idle_timeout: 0", "notary config: proxy.idle_timeout: expected a positive integer, got 0"],
    ["proxy:\n  session_timeout: 1.5", "notary config: proxy.session_timeout: expected a positive integer, got 1.5"],
    ["proxy:\n  connect_timeout: -1", "notary config: proxy.connect_timeout: expected a positive integer, got -1"],
    ["proxy:\n  max_pending_connects: 0", "notary config: proxy.max_pending_connects: expected a positive integer, got 0"],
    ["proxy:\n  max_hidden_span: 0", "notary config: proxy.max_hidden_span: expected a positive integer, got 0"],
    ["proxy:\n  max_hidden_span: 65537", "notary config: proxy.max_hidden_span: expected at most 65536 bytes, got 65537"],
    ["proxy:\n  open: yes", 'notary config: proxy.open: expected true or false, got "yes"'],
    ["tls:\n  enabled: yes", 'notary config: tls.enabled: expected true or false, got "yes"'],
    ["log:\n  level: verbose", 'notary config: log.level: expected one of TRACE, DEBUG, INFO, WARN, ERROR, got "verbose"'],
    ["log:\n  format: xml", 'notary config: log.format: expected one of COMPACT, JSON, got "xml"'],
    ["auth:\n  whitelist: ''", 'notary config: auth.whitelist: expected a file path, got ""'],
    ["notarisation:\n  timeout: 5", 'notary config: unknown key "notarisation"'],
    ["notarization: 5", "notary config: notarization: expected a mapping, got 5"],
    ["notarization: [1]", "notary config: notarization: expected a mapping, got an array"],
    ["- a\n- b", 'notary config: value: expected a mapping, got an array'],
    ["tls:\n  enabled: true\n  private_key_path: k.pem", "notary config: tls.enabled is true, so tls.private_key_path and tls.certificate_path are required"],
    ["notarization:\n  connect_timeout: 0", "notary config: notarization.connect_timeout: expected a positive integer, got 0"],
  ])("%j is refused, naming the key", (yaml, message) => {
    const error = failure(() => loadNotaryConfig(writeConfig(yaml)));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toBe(message);
  });

  test.each([
    [{ NOTARY_THREADS: "0" }, "NOTARY_THREADS: must be at least 1"],
    [{ NOTARY_THREADS: "two" }, "NOTARY_THREADS: must be a whole number"],
    [{ NOTARY_SHUTDOWN_GRACE_S: "-1" }, "NOTARY_SHUTDOWN_GRACE_S: must be a whole number"],
    [{ NOTARY_SHUTDOWN_GRACE_S: "3601" }, "NOTARY_SHUTDOWN_GRACE_S: must be at most 3600"],
  ])("environment %j is refused, naming the variable", (env, message) => {
    const error = failure(() => loadNotaryConfig(writeConfig(""), env));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toBe(message);
  });

  test("proxy mode without auth is refused unless proxy.open says so: an open notary is anyone's TLS relay", () => {
    const error = failure(() => loadNotaryConfig(writeConfig("proxy:\n  enabled: true\n")));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toBe(
      "notary config: proxy.enabled is true and auth is off, so anyone could use this notary as a TLS relay; turn auth on, or set proxy.open: true to accept that",
    );
    // Open on purpose, or behind a whitelist: both start.
    const open = loadNotaryConfig(writeConfig("concurrency: 5\nproxy:\n  enabled: true\n  open: true\n")).proxy;
    expect(open).toMatchObject({ sessionTimeoutMs: 60_000, idleTimeoutMs: 10_000, connectTimeoutMs: 5_000, maxPendingConnects: 3 });
    expect(loadNotaryConfig(writeConfig("proxy:\n  enabled: true\nauth:\n  enabled: true\n")).proxy).toMatchObject({ maxPendingConnects: 16 });
    const pending = loadNotaryConfig(writeConfig("proxy:\n  enabled: true\n  open: true\n  max_pending_connects: 1\n")).proxy;
    expect(pending?.maxPendingConnects).toBe(1);
    // Without proxy mode, `open` changes nothing.
    expect(loadNotaryConfig(writeConfig("proxy:\n  open: false\n")).proxy).toBeNull();
  });

  test("the ledger: a path of its own, a PostgreSQL database shared by replicas, never both", () => {
    const own = writeConfig("notarization:\n  private_key_path: keys/notary.key\nledger:\n  path: state/ledger.sqlite\n");
    expect(loadNotaryConfig(own).ledger).toEqual({ kind: "sqlite", path: join(own, "..", "state/ledger.sqlite") });
    const shared = writeConfig("ledger:\n  database_url: postgres://notary@db.internal/ledger\n");
    expect(loadNotaryConfig(shared).ledger).toEqual({ kind: "postgres", url: "postgres://notary@db.internal/ledger" });
    const both = failure(() => loadNotaryConfig(writeConfig("ledger:\n  path: a.sqlite\n  database_url: postgres://x/y\n")));
    expect(both.message).toBe("notary config: ledger.path and ledger.database_url name two ledgers; give one");
    const notUrl = failure(() => loadNotaryConfig(writeConfig("ledger:\n  database_url: mysql://notary:s3cret@x/y\n")));
    expect(notUrl.message).toBe("notary config: ledger.database_url: expected a postgres:// URL");
  });

  test("a session timeout shorter than the connect timeout bounds the wait for the prover too", () => {
    expect(loadNotaryConfig(writeConfig("notarization:\n  timeout: 10\n")).sessions).toMatchObject({ timeoutMs: 10_000, connectTimeoutMs: 10_000 });
  });

  test("bad YAML is one line naming the file and position", () => {
    const path = writeConfig("port: [1, 2\nhost: x\n");
    const error = failure(() => loadNotaryConfig(path));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toStartWith(`notary config ${path}: not valid YAML: `);
    expect(error.message).toMatch(/line \d+/);
    expect(error.message).not.toContain("\n");
  });

  test("duplicate keys are bad YAML", () => {
    expect(failure(() => loadNotaryConfig(writeConfig("port: 1\nport: 2\n"))).message).toContain("not valid YAML");
  });

  test("a missing file is file_unreadable", () => {
    const error = failure(() => loadNotaryConfig("/nonexistent/notary.yaml"));
    expect(error.code).toBe("file_unreadable");
    expect(error.message).toStartWith("cannot read notary config /nonexistent/notary.yaml: ENOENT");
  });
});

describe("whitelist", () => {
  function writeWhitelist(csv: string): string {
    const path = join(tempDir(), "whitelist.csv");
    writeFileSync(path, csv);
    return path;
  }

  test("reads notary-server's CSV: quoted fields, commas and quotes inside, CRLF, blank lines", () => {
    const path = writeWhitelist(
      '"Name","ApiKey","CreatedAt"\r\n"Alice, Inc.","key-alice","2024-01-01T00:00:00Z"\r\n\r\n"Bob ""B"" Jones",key-bob,2024-02-02\n',
    );
    expect(loadWhitelist(path)).toEqual(new Map([["key-alice", "Alice, Inc."], ["key-bob", 'Bob "B" Jones']]));
  });

  test("columns are found by header name", () => {
    expect(loadWhitelist(writeWhitelist('"ApiKey","CreatedAt","Name"\n"k1","2024","Carol"\n'))).toEqual(new Map([["k1", "Carol"]]));
  });

  test.each([
    ["no header", '"Alice","key-alice","2024"\n', 'whitelist PATH: expected a header row "Name","ApiKey","CreatedAt"'],
    ["empty file", "", 'whitelist PATH: expected a header row "Name","ApiKey","CreatedAt"'],
    ["short row", '"Name","ApiKey","CreatedAt"\n"Alice","key-alice","2024"\n"Bob","key-bob"\n', "whitelist PATH line 3: expected 3 fields, got 2"],
    ["empty key", '"Name","ApiKey","CreatedAt"\n"Alice","","2024"\n', "whitelist PATH line 2: empty ApiKey"],
    ["duplicate key", '"Name","ApiKey","CreatedAt"\n"A","k","1"\n"B","k","2"\n', "whitelist PATH line 3: duplicate ApiKey"],
    ["unterminated quote", '"Name","ApiKey","CreatedAt"\n"A,"k","1"\n', "whitelist PATH line 2: text after a closing quote"],
    ["open quote at end", '"Name","ApiKey","CreatedAt"\n"A","k","1\n', "whitelist PATH line 2: unterminated quoted field"],
    ["stray quote", '"Name","ApiKey","CreatedAt"\nA"x,"k","1"\n', 'whitelist PATH line 2: stray quote inside a field'],
  ])("%s is a config error naming the line", (_, csv, message) => {
    const path = writeWhitelist(csv);
    const error = failure(() => loadWhitelist(path));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toBe(message.replace("PATH", path));
  });

  test("a missing whitelist is file_unreadable", () => {
    expect(failure(() => loadWhitelist("/nonexistent/whitelist.csv")).code).toBe("file_unreadable");
  });
});
