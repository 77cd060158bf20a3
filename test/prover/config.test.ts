import { cpus, totalmem } from "node:os";
import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/core/errors.ts";
import { defaultHostCount } from "../../src/engine/host/placement.ts";
import { loadProverConfig } from "../../src/prover/config.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../testkit/env.ts";

function failure(env: Record<string, string>): AppError {
  try {
    loadProverConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected an AppError");
}

describe("prover configuration", () => {
  test("settings come grouped by the part of the prover that uses them", () => {
    const config = loadProverConfig({
      PROVER_HOST: "0.0.0.0",
      PROVER_PORT: "9000",
      PROVER_MAX_SENT_DATA: "1024",
      PROVER_MAX_RECV_DATA: "2048",
      PROVER_POOL_SIZE: "0",
      PROVER_MAX_BODY_BYTES: "1000",
      PROVER_SESSION_TIMEOUT: "60000ms",
      PROVER_POOL_IDLE: "30s",
      PROVER_ALLOWED_HOSTS: "a.test, *.b.test",
      PROVER_RESOLVE: "a.test:443:10.0.0.1",
      PROVER_NOTARY_URL: "http://notary.internal:7047, http://notary-b.internal:7047",
      PROVER_API_KEYS: "k1,k2",
      PROVER_SSE_PER_REQUEST: "3",
      LOG_FORMAT: "JSON",
      PROVER_DATA_DIR: "/srv/tlsproof",
      PROVER_ENGINE_HOSTS: "3",
      PROVER_ENGINE_HANG: "20s",
      PROVER_SETUP_STALL: "45s",
      PROVER_PAUSE_REFILLS: "0",
      PROVER_THREADS: "1",
    });
    expect(config.engine).toMatchObject({ hosts: 3, hangMs: 20_000, setupStallMs: 45_000, pauseRefills: false, threads: 1 });
    expect(loadProverConfig({}).engine.setupStallMs).toBe(60_000);
    expect(loadProverConfig({}).engine.pauseRefills).toBe(true);
    // Unset, a warm session's idle limit depends on the notary; the embedded notary's timeout follows it.
    const defaults = loadProverConfig({});
    expect(defaults.pool.idleMs).toBe(3_600_000);
    expect(defaults.notary.embedded.timeoutMs).toBe(3_600_000 + 2 * 300_000);
    expect(loadProverConfig({ PROVER_NOTARY_URL: "http://notary.internal:7047" }).pool.idleMs).toBe(600_000);
    expect(config.listen).toMatchObject({ host: "0.0.0.0", port: 9000, maxRequestBodyBytes: 1000 + 64 * 1024 });
    expect(config.listen.idleTimeoutS).toBeGreaterThan(config.sse.heartbeatMs / 1000);
    expect(config.sessionLimits).toEqual({ maxSentData: 1024, maxRecvData: 2048 });
    expect(config.proxy).toMatchObject({ maxBodyBytes: 1000, sessionTimeoutMs: 60_000 });
    expect(config.proxy.policy).toEqual({
      allowPrivateTargets: false,
      resolve: new Map([["a.test:443", "10.0.0.1"]]),
      allowedHosts: ["a.test", "*.b.test"],
      allowedPorts: [443, 8443],
    });
    expect(config.notary.urls).toEqual(["http://notary.internal:7047", "http://notary-b.internal:7047"]);
    // The embedded notary outlives a warm session's idle time plus a whole session, and ends unconnected ones soon.
    expect(config.notary.embedded).toMatchObject({ maxSentData: 1024, maxRecvData: 2048, timeoutMs: 30_000 + 2 * 60_000, connectTimeoutMs: 30_000 });
    expect(config.auth).toEqual({ full: ["k1", "k2"], scoped: [] });
    expect(config.sse.perRequest).toBe(3);
    expect(config.log.format).toBe("json");
    expect(config.dataDir).toBe("/srv/tlsproof");
  });

  test("engine hosts: the count defaults from the machine; more hosts allow more live sessions", () => {
    const machine = { cores: cpus().length, totalMemoryBytes: totalmem() };
    expect(loadProverConfig({ PROVER_POOL_SIZE: "1" }).engine.hosts).toBe(defaultHostCount(machine, true));
    expect(loadProverConfig({ PROVER_POOL_SIZE: "1", PROVER_NOTARY_URL: "http://notary.internal:7047" }).engine.hosts).toBe(defaultHostCount(machine, false));
    const one = loadProverConfig({ PROVER_ENGINE_HOSTS: "1", PROVER_POOL_SIZE: "1" });
    const two = loadProverConfig({ PROVER_ENGINE_HOSTS: "2", PROVER_POOL_SIZE: "1" });
    // At the default 4096/16384: one host holds two sessions, both sides of each (the embedded notary's Verifiers
    // run in the hosts too), two hold four.
    expect(one.proxy.maxSessions).toBe(2);
    expect(two.proxy.maxSessions).toBe(4);
    expect(failure({ PROVER_ENGINE_HOSTS: "1", PROVER_MAX_SESSIONS: "3" }).message).toBe(
      "PROVER_MAX_SESSIONS must be at most 2 with these session sizes (1 engine host of 4 GiB, holding both sides of each session)",
    );
    expect(loadProverConfig({ PROVER_ENGINE_HOSTS: "2", PROVER_MAX_SESSIONS: "3" }).proxy.maxSessions).toBe(3);
  });

  test("the embedded notary's proxy sessions live seconds, bounded by the prover's own timeouts", () => {
    expect(loadProverConfig({}).proxyMode.embedded).toMatchObject({ sessionTimeoutMs: 60_000, idleTimeoutMs: 30_000 + 5_000, connectTimeoutMs: 10_000 });
    const tuned = loadProverConfig({ PROVER_PROXY_SESSION_TIMEOUT: "20s", PROVER_RESPONSE_TIMEOUT: "2000ms", PROVER_CONNECT_TIMEOUT: "1500ms" });
    // A silent target is the prover's target_timeout first; the notary's idle limit only ends a forgotten relay.
    expect(tuned.proxyMode.embedded).toMatchObject({ sessionTimeoutMs: 20_000, idleTimeoutMs: 7_000, connectTimeoutMs: 1_500 });
    expect(failure({ PROVER_PROXY_SESSION_TIMEOUT: "0s" }).message).toBe("PROVER_PROXY_SESSION_TIMEOUT: must be at least 1s");
  });

  test("durations: each setting a duration (250ms, 30s, 5m); a former name, a number of its unit, still read and said deprecated", () => {
    expect(loadProverConfig({ PROVER_SESSION_TIMEOUT: "2m", PROVER_CONNECT_TIMEOUT: "250ms", PROVER_POOL_IDLE: "1h" })).toMatchObject({
      proxy: { sessionTimeoutMs: 120_000, connectTimeoutMs: 250 },
      pool: { idleMs: 3_600_000 },
      deprecated: [],
    });
    const former = loadProverConfig({ PROVER_SESSION_TIMEOUT_MS: "5000", PROVER_IDLE_TIMEOUT_S: "7", PROVER_POOL_IDLE_S: "30" });
    expect(former).toMatchObject({ proxy: { sessionTimeoutMs: 5000 }, listen: { idleTimeoutS: 7 }, pool: { idleMs: 30_000 } });
    expect(former.deprecated).toEqual([
      "PROVER_SESSION_TIMEOUT_MS is deprecated and will go: set PROVER_SESSION_TIMEOUT=5s instead",
      "PROVER_IDLE_TIMEOUT_S is deprecated and will go: set PROVER_IDLE_TIMEOUT=7s instead",
      "PROVER_POOL_IDLE_S is deprecated and will go: set PROVER_POOL_IDLE=30s instead",
    ]);
  });

  test("PROVER_POOL_HOSTS: host names, a fully qualified one's trailing dot dropped as the prover names targets; an empty label is refused", () => {
    expect(loadProverConfig({ PROVER_POOL_HOSTS: "API.example.com., b.test" }).pool.hosts).toEqual(["api.example.com", "b.test"]);
    expect(loadProverConfig({ PROVER_POOL_HOSTS: "a.test, a.test." }).pool.hosts).toEqual(["a.test"]);
    expect(() => loadProverConfig({ PROVER_POOL_HOSTS: "a..test" })).toThrow("PROVER_POOL_HOSTS");
  });

  test("PROVER_ALLOWED_PORTS: a list, or * for any port", () => {
    expect(loadProverConfig({ PROVER_ALLOWED_PORTS: "443, 4443" }).proxy.policy.allowedPorts).toEqual([443, 4443]);
    expect(loadProverConfig({ PROVER_ALLOWED_PORTS: "*" }).proxy.policy.allowedPorts).toEqual([]);
  });

  test("headers that identify the end user are dropped unless PROVER_FORWARD_HEADERS names them", () => {
    const dropped = loadProverConfig({}).proxy.identifyingHeaders;
    for (const name of ["x-forwarded-for", "x-real-ip", "forwarded", "origin", "referer", "cf-connecting-ip", "true-client-ip", "x-client-ip", "via"]) {
      expect(dropped.has(name)).toBe(true);
    }
    const forwarded = loadProverConfig({ PROVER_FORWARD_HEADERS: "Origin, referer" }).proxy.identifyingHeaders;
    expect([forwarded.has("origin"), forwarded.has("referer"), forwarded.has("x-forwarded-for")]).toEqual([false, false, true]);
  });

  test("CORS: no origin by default, the listed ones otherwise", () => {
    expect(loadProverConfig({}).corsOrigins).toEqual([]);
    expect(loadProverConfig({ PROVER_CORS_ORIGINS: "https://app.example.com, http://127.0.0.1:5173" }).corsOrigins).toEqual(["https://app.example.com", "http://127.0.0.1:5173"]);
  });

  test("memory and disk: outcomes in memory by bytes, proxy answer bytes in flight, the store's retention", () => {
    const defaults = loadProverConfig({});
    expect(defaults.delivery.maxRetainedBytes).toBe(4 * 1024 * 1024);
    expect(defaults.proxyMode.inFlightBytes).toBe(64 * 1024 * 1024);
    expect(defaults.store.retentionMs).toBeUndefined();
    const set = loadProverConfig({ PROVER_STORE_RETENTION: " 30d ", PROVER_PROXY_INFLIGHT_BYTES: "8388608", PROVER_PROXY_MAX_RECV_DATA: "1048576" });
    expect(set.store.retentionMs).toBe(30 * 86_400_000);
    expect(set.proxyMode).toMatchObject({ inFlightBytes: 8_388_608, maxRecvData: 1_048_576 });
    expect(loadProverConfig({ PROVER_STORE_RETENTION: "12h" }).store.retentionMs).toBe(12 * 3_600_000);
    expect(loadProverConfig({ PROVER_STORE_RETENTION: "90m" }).store.retentionMs).toBe(90 * 60_000);
  });

  test("proof streams: a place per client, and an unknown id holds one for seconds", () => {
    const { sse, delivery } = loadProverConfig({});
    expect(sse.perClient).toBe(64);
    expect(delivery.unknownRequestMs).toBe(30_000);
    expect(loadProverConfig({ PROVER_UNKNOWN_REQUEST_TIMEOUT: "300s" }).delivery.unknownRequestMs).toBe(300_000);
  });

  test.each([
    [{ PROVER_FORWARD_HEADERS: "x-forwarded-for,cookie" }, "PROVER_FORWARD_HEADERS: must name only headers the prover drops by default"],
    [{ PROVER_SSE_PER_CLIENT: "0" }, "PROVER_SSE_PER_CLIENT: must be at least 1"],
    [{ PROVER_API_KEYS: "CHANGE-ME-client-key" }, "PROVER_API_KEYS: replace the example's CHANGE-ME… value"],
    [{ PROVER_NOTARY_API_KEY: "CHANGE-ME-notary-key" }, "PROVER_NOTARY_API_KEY: replace the example's CHANGE-ME… value"],
    [{ PROVER_CORS_ORIGINS: "https://app.example.com/" }, "PROVER_CORS_ORIGINS[0]: must be origins as browsers send them"],
    [{ PROVER_API_KEYS: "k1,k2", PROVER_API_KEYS_SCOPED: "k2" }, "PROVER_API_KEYS_SCOPED: a key is also in PROVER_API_KEYS"],
    [{ PROVER_ALLOWED_PORTS: "" }, "PROVER_ALLOWED_PORTS"],
    [{ PROVER_ALLOWED_PORTS: "443,http" }, "PROVER_ALLOWED_PORTS"],
    [{ PROVER_ALLOWED_PORTS: "0" }, "PROVER_ALLOWED_PORTS"],
    [{ PROVER_ALLOWED_PORTS: "70000" }, "PROVER_ALLOWED_PORTS"],
    [{ LOG_FORMAT: "xml" }, "LOG_FORMAT: must be one of compact, json"],
    [{ PROVER_PORT: "eighty" }, "PROVER_PORT: must be a whole number"],
    [{ PROVER_ENGINE_HOSTS: "0" }, "PROVER_ENGINE_HOSTS: must be at least 1"],
    [{ PROVER_IDLE_TIMEOUT: "4500ms" }, "PROVER_IDLE_TIMEOUT: must be whole seconds"],
    [{ PROVER_SESSION_TIMEOUT: "300000ms", PROVER_SESSION_TIMEOUT_MS: "300000" }, "PROVER_SESSION_TIMEOUT_MS is the former name of PROVER_SESSION_TIMEOUT: set PROVER_SESSION_TIMEOUT only"],
    [{ PROVER_SESSION_TIMEOUT_MS: "5m" }, "PROVER_SESSION_TIMEOUT_MS: must be a whole number"],
    [{ PROVER_ENGINE_HANG: "soon" }, "PROVER_ENGINE_HANG: must be a duration such as 250ms, 30s, 90m, 12h or 30d"],
    [{ PROVER_SETUP_STALL: "1s" }, "PROVER_SETUP_STALL: must be at least 5s"],
    [{ PROVER_PAUSE_REFILLS: "yes" }, "PROVER_PAUSE_REFILLS"],
    [{ PROVER_NOTARY_URL: "notary:7047" }, "PROVER_NOTARY_URL[0]: must be an http(s) URL"],
    [{ PROVER_NOTARY_URL: "http://a:7047,notary:7047" }, "PROVER_NOTARY_URL[1]: must be an http(s) URL"],
    [{ PROVER_INSTANCE_TIMEOUT: "1s" }, "PROVER_INSTANCE_TIMEOUT: must be at least 3s"],
    [{ PROVER_STORE_URL: "mysql://x" }, "PROVER_STORE_URL: must be a postgres:// URL"],
    [{ PROVER_SHUTDOWN_GRACE: "3601s" }, "PROVER_SHUTDOWN_GRACE: must be at most 1h"],
    [{ PROVER_PUBLIC_PROOFS: "yes" }, "PROVER_PUBLIC_PROOFS: must be 1, 0, true or false"],
    [{ PROVER_POOL_IDLE: "0s" }, "PROVER_POOL_IDLE: must be at least 1s"],
    [{ PROVER_RESOLVE: "a.test:443" }, "PROVER_RESOLVE"],
    [{ PROVER_STORE_RETENTION: "30" }, "PROVER_STORE_RETENTION: must be a duration such as 250ms, 30s, 90m, 12h or 30d"],
    [{ PROVER_STORE_RETENTION: "30s" }, "PROVER_STORE_RETENTION: must be at least 1m"],
    [{ PROVER_PROXY_INFLIGHT_BYTES: "1000000" }, "PROVER_PROXY_INFLIGHT_BYTES must be at least PROVER_PROXY_MAX_RECV_DATA (4194304)"],
  ])("%j is refused, naming the variable", (env, message) => {
    const error = failure(env as Record<string, string>);
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain(message);
    expect(error.message).not.toContain("\n");
  });

  test("PROVER_NOTARY_KEYS: PEM files whose keys remote notaries' proofs must be signed with", () => {
    const dir = tempDir("keys");
    const [a, b] = [generateKey("secp256k1"), generateKey("secp256r1")];
    writeFileSync(join(dir, "a.pub"), a.publicKeyPem);
    writeFileSync(join(dir, "b.pub"), b.publicKeyPem);
    const remote = { PROVER_NOTARY_URL: "http://notary.internal:7047" };
    const config = loadProverConfig({ ...remote, PROVER_NOTARY_KEYS: `${join(dir, "a.pub")}, ${join(dir, "b.pub")}` });
    expect(config.notary.pinnedKeys.map((key) => key.algorithm)).toEqual(["secp256k1", "secp256r1"]);
    expect(loadProverConfig(remote).notary.pinnedKeys).toEqual([]);
    const missing = failure({ ...remote, PROVER_NOTARY_KEYS: join(dir, "absent.pub") });
    expect(missing.code).toBe("config_invalid");
    expect(missing.message).toStartWith("PROVER_NOTARY_KEYS: ");
    // The embedded notary's key is its own: pins for it would be a mistake, not a setting.
    expect(failure({ PROVER_NOTARY_KEYS: join(dir, "a.pub") }).message).toContain("set PROVER_NOTARY_URL");
  });
});
