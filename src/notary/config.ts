/**
 * The notary's YAML configuration, in the shape of TLSNotary's notary-server (alpha.12) so operators
 * can reuse theirs. Every key is optional with notary-server's default; unknown keys and wrong types
 * are errors naming the key. Relative paths resolve against the config file's folder, so a config
 * means the same thing whatever directory the notary starts from.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import { AppError } from "../errors.ts";
import type { SignatureAlgorithm } from "../proof/format.ts";
import { describeSchemaIssue, strictMapping } from "../proof/verify.ts";

export type LogLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR";
export type LogFormat = "COMPACT" | "JSON";

export interface NotaryConfig {
  host: string;
  port: number;
  /** Sessions at once; beyond it the notary answers 503. */
  concurrency: number;
  notarization: {
    maxSentData: number;
    maxRecvData: number;
    timeoutSeconds: number;
    /** Absolute path of the PKCS#8 key, or null for a random key per start. */
    privateKeyPath: string | null;
    signatureAlgorithm: SignatureAlgorithm;
  };
  tls: { enabled: boolean; privateKeyPath: string | null; certificatePath: string | null };
  log: { level: LogLevel; format: LogFormat };
  auth: { enabled: boolean; whitelistPath: string };
}

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

const configSchema = strictMapping(
  {
    host: v.optional(v.pipe(v.string("expected a host name or address"), v.minLength(1, "expected a host name or address")), "0.0.0.0"),
    port: v.optional(port, 7047),
    concurrency: v.optional(positiveInteger, 32),
    notarization: section({
      max_sent_data: v.optional(positiveInteger, 4096),
      max_recv_data: v.optional(positiveInteger, 16384),
      timeout: v.optional(positiveInteger, 1800),
      private_key_path: optionalPath,
      signature_algorithm: v.optional(v.picklist(["secp256k1", "secp256r1"], "expected secp256k1 or secp256r1"), "secp256k1"),
    }),
    tls: section({ enabled: v.optional(flag, false), private_key_path: optionalPath, certificate_path: optionalPath }),
    log: section({
      level: v.optional(caseInsensitive(["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]), "DEBUG"),
      format: v.optional(caseInsensitive(["COMPACT", "JSON"]), "COMPACT"),
    }),
    auth: section({ enabled: v.optional(flag, false), whitelist: v.optional(path, "./whitelist.csv") }),
  },
  "expected a mapping",
);

/** Validates a parsed config document; `baseDir` anchors its relative paths. Throws AppError("config_invalid"). */
export function parseNotaryConfig(document: unknown, baseDir: string): NotaryConfig {
  const parsed = v.safeParse(configSchema, document ?? {});
  if (!parsed.success) throw new AppError("config_invalid", `notary config: ${describeSchemaIssue(parsed.issues[0])}`);
  const { notarization, tls, log, auth, ...top } = parsed.output;
  const anchored = (value: string | null): string | null => (value === null ? null : resolve(baseDir, value));
  if (tls.enabled && (tls.private_key_path === null || tls.certificate_path === null)) {
    throw new AppError("config_invalid", "notary config: tls.enabled is true, so tls.private_key_path and tls.certificate_path are required");
  }
  return {
    ...top,
    notarization: {
      maxSentData: notarization.max_sent_data,
      maxRecvData: notarization.max_recv_data,
      timeoutSeconds: notarization.timeout,
      privateKeyPath: anchored(notarization.private_key_path),
      signatureAlgorithm: notarization.signature_algorithm,
    },
    tls: { enabled: tls.enabled, privateKeyPath: anchored(tls.private_key_path), certificatePath: anchored(tls.certificate_path) },
    log: { level: log.level, format: log.format },
    auth: { enabled: auth.enabled, whitelistPath: resolve(baseDir, auth.whitelist) },
  };
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new AppError("file_unreadable", `cannot read ${what} ${path}: ${(error as Error).message}`);
  }
}

export function loadNotaryConfig(path: string): NotaryConfig {
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
  return parseNotaryConfig(document, dirname(resolve(path)));
}

// ---- whitelist ----

/** RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks. Returns [line, fields][]. */
function csvRecords(text: string, path: string): [number, string[]][] {
  const records: [number, string[]][] = [];
  let fields: string[] = [];
  let field = "";
  let line = 1;
  let recordLine = 1;
  let quoted = false;
  let fieldWasQuoted = false;
  const endField = () => {
    fields.push(field);
    field = "";
    fieldWasQuoted = false;
  };
  const endRecord = () => {
    endField();
    if (fields.length > 1 || fields[0] !== "") records.push([recordLine, fields]);
    fields = [];
    recordLine = line;
  };
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else {
        if (char === "\n") line++;
        field += char;
      }
    } else if (char === '"') {
      if (field !== "" || fieldWasQuoted) throw new AppError("config_invalid", `whitelist ${path} line ${line}: stray quote inside a field`);
      quoted = fieldWasQuoted = true;
    } else if (char === ",") endField();
    else if (char === "\n" || char === "\r") {
      if (char === "\r" && text[i + 1] === "\n") i++;
      line++;
      endRecord();
    } else {
      if (fieldWasQuoted) throw new AppError("config_invalid", `whitelist ${path} line ${line}: text after a closing quote`);
      field += char;
    }
  }
  if (quoted) throw new AppError("config_invalid", `whitelist ${path} line ${recordLine}: unterminated quoted field`);
  endRecord();
  return records;
}

const WHITELIST_COLUMNS = ["Name", "ApiKey", "CreatedAt"] as const;

/** The API-key whitelist, notary-server's CSV `"Name","ApiKey","CreatedAt"` with a header row: API key → name. */
export function loadWhitelist(path: string): Map<string, string> {
  const [header, ...rows] = csvRecords(readText(path, "whitelist"), path);
  const columns = header?.[1].map((name) => name.trim());
  if (!columns || WHITELIST_COLUMNS.some((name) => !columns.includes(name))) {
    throw new AppError("config_invalid", `whitelist ${path}: expected a header row "Name","ApiKey","CreatedAt"`);
  }
  const nameAt = columns.indexOf("Name");
  const keyAt = columns.indexOf("ApiKey");
  const whitelist = new Map<string, string>();
  for (const [line, fields] of rows) {
    const problem = (reason: string) => new AppError("config_invalid", `whitelist ${path} line ${line}: ${reason}`);
    if (fields.length !== columns.length) throw problem(`expected ${columns.length} fields, got ${fields.length}`);
    const apiKey = fields[keyAt] ?? "";
    if (apiKey === "") throw problem("empty ApiKey");
    if (whitelist.has(apiKey)) throw problem("duplicate ApiKey");
    whitelist.set(apiKey, fields[nameAt] ?? "");
  }
  return whitelist;
}
