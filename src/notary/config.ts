/**
 * The notary's settings. The YAML file has the shape of TLSNotary's notary-server (alpha.12) so operators
 * can reuse theirs, plus `notarization.connect_timeout`. Every key is optional with notary-server's default;
 * unknown keys and wrong types are errors naming the key. Relative paths resolve against the config file's
 * folder, so a config means the same thing whatever directory the notary starts from. A few process
 * settings come from NOTARY_* variables. docs/notary.md documents each one.
 */
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import { AppError } from "../core/errors.ts";
import { parseOrThrow } from "../core/schema.ts";
import type { SignatureAlgorithm } from "../proof/format.ts";
import { strictMapping } from "../core/schema.ts";
import { type TargetPolicy, parseResolveList } from "../core/target-policy.ts";
import { refuseExposedTestAnchor } from "../core/test-anchor-exposure.ts";
import { flag as envFlag, parseEnv, wholeNumber } from "../config/env.ts";
import {
  NOTARY_CONNECT_TIMEOUT_S,
  PROXY_ATTESTATION_WINDOW_S,
  PROXY_CONNECT_TIMEOUT_S,
  PROXY_IDLE_TIMEOUT_S,
  PROXY_MAX_HIDDEN_SPAN,
  PROXY_MAX_HIDDEN_SPAN_LIMIT,
  PROXY_MAX_RECV_DATA,
  PROXY_MAX_SENT_DATA,
  PROXY_SESSION_TIMEOUT_S,
  type ProxyLimits,
  type SessionLimits,
} from "../protocol/limits.ts";

export type LogLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR";
export type LogFormat = "COMPACT" | "JSON";

/** Where a notary's ledger lives (src/notary/ledger.ts): a SQLite file, a PostgreSQL database, or this process's memory. */
export type LedgerPlace = { kind: "sqlite"; path: string } | { kind: "postgres"; url: string } | { kind: "memory" };

/** The SQLite file beside a notary's key file: its ledger's default place. */
export const LEDGER_FILE = "notary-ledger.sqlite";

export interface NotaryConfig {
  listen: { host: string; port: number };
  sessions: SessionLimits;
  /** Absolute path of the PKCS#8 key, or null for a random key per start. */
  key: { privateKeyPath: string | null; signatureAlgorithm: SignatureAlgorithm };
  tls: { enabled: boolean; privateKeyPath: string | null; certificatePath: string | null };
  log: { level: LogLevel; format: LogFormat };
  auth: { enabled: boolean; whitelistPath: string };
  /** Proxy mode's settings; null when the notary does not offer it. */
  proxy: ProxyLimits | null;
  /** Where the ledger of signed request ids is (src/notary/ledger.ts): beside the key file unless the YAML says. */
  ledger: LedgerPlace;
  /** From the environment: NOTARY_THREADS, NOTARY_SHUTDOWN_GRACE_S, TLSN_TEST_TRUST_ANCHOR. */
  process: { threads: number; shutdownGraceMs: number; testTrustAnchorPath?: string };
}

const NotaryEnv = v.object({
  NOTARY_THREADS: v.optional(wholeNumber(1, 64)),
  NOTARY_SHUTDOWN_GRACE_S: v.optional(wholeNumber(0, 3600), "30"),
  TLSN_TEST_TRUST_ANCHOR: v.optional(v.string()),
  TLSN_TEST_TRUST_ANCHOR_EXPOSED: v.optional(envFlag(), "0"),
});

const positiveInteger = v.pipe(
  v.number("expected a positive integer"),
  v.safeInteger("expected a positive integer"),
  v.minValue(1, "expected a positive integer"),
);
const port = v.pipe(
  v.number("expected a port number"),
  v.integer("expected a port number"),
  v.minValue(0, "expected a port number (0-65535)"),
  v.maxValue(65535, "expected a port number (0-65535)"),
);
const flag = v.boolean("expected true or false");
const path = v.pipe(v.string("expected a file path"), v.minLength(1, "expected a file path"));
const optionalPath = v.optional(v.nullable(path), null);
/** One of `options` in any case (`info` and `INFO` are the same level), as written in `options`. */
const caseInsensitive = <const T extends string[]>(options: T) => {
  const message = `expected one of ${options.join(", ")}`;
  return v.pipe(
    v.string(message),
    v.check((value) => options.includes(value.toUpperCase()), message),
    v.transform((value) => value.toUpperCase() as T[number]),
  );
};
/** A section that may be absent or empty (`tls:` alone is null in YAML): every key inside has a default. */
const section = <T extends v.ObjectEntries>(entries: T) => {
  const schema = strictMapping(entries, "expected a mapping");
  return v.nullish(schema, {} as v.InferInput<typeof schema>);
};

export const configSchema = strictMapping(
  {
    host: v.optional(v.pipe(v.string("expected a host name or address"), v.minLength(1, "expected a host name or address")), "0.0.0.0"),
    port: v.optional(port, 7047),
    concurrency: v.optional(positiveInteger, 32),
    notarization: section({
      max_sent_data: v.optional(positiveInteger, 4096),
      max_recv_data: v.optional(positiveInteger, 16384),
      timeout: v.optional(positiveInteger, 1800),
      connect_timeout: v.optional(positiveInteger, NOTARY_CONNECT_TIMEOUT_S),
      private_key_path: optionalPath,
      signature_algorithm: v.optional(v.picklist(["secp256k1", "secp256r1"], "expected secp256k1 or secp256r1"), "secp256k1"),
    }),
    tls: section({ enabled: v.optional(flag, false), private_key_path: optionalPath, certificate_path: optionalPath }),
    log: section({
      level: v.optional(caseInsensitive(["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]), "DEBUG"),
      format: v.optional(caseInsensitive(["COMPACT", "JSON"]), "COMPACT"),
    }),
    auth: section({ enabled: v.optional(flag, false), whitelist: v.optional(path, "./whitelist.csv") }),
    ledger: section({
      path: optionalPath,
      // Checked in ledgerPlace, in words that never repeat it: the URL may hold a password.
      database_url: v.optional(v.nullable(v.string("expected a postgres:// URL")), null),
    }),
    proxy: section({
      enabled: v.optional(flag, false),
      allowed_hosts: v.optional(v.array(v.pipe(v.string("expected a host name"), v.minLength(1, "expected a host name")), "expected a list of host names"), []),
      allowed_ports: v.optional(v.array(port, "expected a list of ports"), [443, 8443]),
      allow_private_targets: v.optional(flag, false),
      resolve: v.optional(v.array(v.string("expected host:port:address"), "expected a list of host:port:address"), []),
      max_sent_data: v.optional(positiveInteger, PROXY_MAX_SENT_DATA),
      max_recv_data: v.optional(positiveInteger, PROXY_MAX_RECV_DATA),
      session_timeout: v.optional(positiveInteger, PROXY_SESSION_TIMEOUT_S),
      idle_timeout: v.optional(positiveInteger, PROXY_IDLE_TIMEOUT_S),
      connect_timeout: v.optional(positiveInteger, PROXY_CONNECT_TIMEOUT_S),
      max_pending_connects: v.optional(positiveInteger),
      open: v.optional(flag, false),
      attestation_window: v.optional(positiveInteger, PROXY_ATTESTATION_WINDOW_S),
      max_hidden_span: v.optional(
        v.pipe(positiveInteger, v.maxValue(PROXY_MAX_HIDDEN_SPAN_LIMIT, `expected at most ${PROXY_MAX_HIDDEN_SPAN_LIMIT} bytes`)),
        PROXY_MAX_HIDDEN_SPAN,
      ),
    }),
  },
  "expected a mapping",
);

/**
 * Target connections a standalone notary lets be in progress at once, unless its YAML says: half its places, so
 * that targets that never accept (each holding a place up to `proxy.connect_timeout`) leave the other half to
 * relays that work. A connection lasts a round trip, a session several, so honest load rarely has half connecting.
 */
const pendingConnectsFor = (concurrency: number): number => Math.ceil(concurrency / 2);

/**
 * The ledger's place: `ledger.database_url` (PostgreSQL, shared by the notary's replicas), else `ledger.path`, else
 * notary-ledger.sqlite beside the key file; with no key file (a key per start), memory.
 */
function ledgerPlace(ledger: { database_url: string | null; path: string | null }, path: string | null, keyPath: string | null): LedgerPlace {
  if (ledger.database_url !== null && ledger.path !== null) throw new AppError("config_invalid", "notary config: ledger.path and ledger.database_url name two ledgers; give one");
  if (ledger.database_url !== null) {
    if (!/^postgres(ql)?:\/\//.test(ledger.database_url)) throw new AppError("config_invalid", "notary config: ledger.database_url: expected a postgres:// URL");
    return { kind: "postgres", url: ledger.database_url };
  }
  if (path !== null) return { kind: "sqlite", path };
  return keyPath === null ? { kind: "memory" } : { kind: "sqlite", path: join(dirname(keyPath), LEDGER_FILE) };
}

/** Validates a parsed config document; `baseDir` anchors its relative paths. Throws AppError("config_invalid"). */
export function parseNotaryConfig(document: unknown, baseDir: string): Omit<NotaryConfig, "process"> {
  const { notarization, tls, log, auth, proxy, ledger, ...top } = parseOrThrow(configSchema, document ?? {}, "config_invalid", { where: "notary config", showInput: true });
  const anchored = (value: string | null): string | null => (value === null ? null : resolve(baseDir, value));
  if (tls.enabled && (tls.private_key_path === null || tls.certificate_path === null)) {
    throw new AppError("config_invalid", "notary config: tls.enabled is true, so tls.private_key_path and tls.certificate_path are required");
  }
  // Without auth, anyone could have the notary connect to any public host on the allowed ports (docs/notary.md).
  if (proxy.enabled && !auth.enabled && !proxy.open) {
    throw new AppError(
      "config_invalid",
      "notary config: proxy.enabled is true and auth is off, so anyone could use this notary as a TLS relay; turn auth on, or set proxy.open: true to accept that",
    );
  }
  return {
    listen: { host: top.host, port: top.port },
    sessions: {
      concurrency: top.concurrency,
      maxSentData: notarization.max_sent_data,
      maxRecvData: notarization.max_recv_data,
      timeoutMs: notarization.timeout * 1000,
      // The session's own timeout ends a waiting session too, when it is the shorter one.
      connectTimeoutMs: Math.min(notarization.connect_timeout, notarization.timeout) * 1000,
    },
    key: { privateKeyPath: anchored(notarization.private_key_path), signatureAlgorithm: notarization.signature_algorithm },
    tls: { enabled: tls.enabled, privateKeyPath: anchored(tls.private_key_path), certificatePath: anchored(tls.certificate_path) },
    log: { level: log.level, format: log.format },
    auth: { enabled: auth.enabled, whitelistPath: resolve(baseDir, auth.whitelist) },
    ledger: ledgerPlace(ledger, anchored(ledger.path), anchored(notarization.private_key_path)),
    proxy: proxy.enabled
      ? {
          policy: {
            allowPrivateTargets: proxy.allow_private_targets,
            resolve: parseResolveList(proxy.resolve.join(","), "proxy.resolve"),
            allowedHosts: proxy.allowed_hosts,
            allowedPorts: proxy.allowed_ports,
            settingNames: { hosts: "the notary's proxy.allowed_hosts", ports: "the notary's proxy.allowed_ports" },
          },
          maxSentData: proxy.max_sent_data,
          maxRecvData: proxy.max_recv_data,
          sessionTimeoutMs: proxy.session_timeout * 1000,
          idleTimeoutMs: proxy.idle_timeout * 1000,
          connectTimeoutMs: proxy.connect_timeout * 1000,
          maxPendingConnects: proxy.max_pending_connects ?? pendingConnectsFor(top.concurrency),
          attestationWindowMs: proxy.attestation_window * 1000,
          maxHiddenSpanBytes: proxy.max_hidden_span,
        }
      : null,
  };
}

export function readText(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new AppError("file_unreadable", `cannot read ${what} ${path}: ${(error as Error).message}`);
  }
}

/** The notary's whole configuration: the YAML file at `path` and the NOTARY_* variables of `env`. */
export function loadNotaryConfig(path: string, env: Record<string, string | undefined> = {}): NotaryConfig {
  const e = parseEnv(NotaryEnv, env);
  const text = readText(path, "notary config");
  let document: unknown;
  try {
    // Warnings (an unknown tag, …) would print a multi-line frame; the schema judges the resulting values.
    document = parseYaml(text, { logLevel: "error" });
  } catch (error) {
    // The yaml library appends a multi-line code frame; its first line has the reason and position.
    const reason = ((error as Error).message.split("\n")[0] ?? "").trim();
    throw new AppError("config_invalid", `notary config ${path}: not valid YAML: ${reason}`);
  }
  const config = parseNotaryConfig(document, dirname(resolve(path)));
  refuseExposedTestAnchor({
    role: "notary",
    host: config.listen.host,
    hostSetting: "the config's host",
    tls: config.tls.enabled,
    testTrustAnchorPath: e.TLSN_TEST_TRUST_ANCHOR,
    allowed: e.TLSN_TEST_TRUST_ANCHOR_EXPOSED,
  });
  return {
    ...config,
    process: {
      threads: e.NOTARY_THREADS ?? Math.max(1, cpus().length),
      shutdownGraceMs: e.NOTARY_SHUTDOWN_GRACE_S * 1000,
      testTrustAnchorPath: e.TLSN_TEST_TRUST_ANCHOR,
    },
  };
}
