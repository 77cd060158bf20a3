/**
 * The notary's API-key whitelist: notary-server's CSV `"Name","ApiKey","CreatedAt"` with a header row,
 * re-read when the file changes, and a check of a presented key that takes the same time whichever key
 * (if any) it matches.
 */
import { statSync } from "node:fs";
import { apiKeyMatcher } from "../core/api-key.ts";
import { AppError } from "../core/errors.ts";
import { readText } from "./config.ts";

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

/** The whitelist file as API key → name. */
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

/**
 * A check of presented keys against the whitelist at `path`, re-read when the file's modification time
 * changes. A broken edit keeps the last good list rather than opening the door.
 */
export function whitelistChecker(path: string, load: (path: string) => Map<string, string> = loadWhitelist): (apiKey: string) => boolean {
  let loadedAt = -1;
  let matches = apiKeyMatcher([]);
  return (apiKey) => {
    const mtime = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    if (mtime !== loadedAt) {
      try {
        matches = apiKeyMatcher([...load(path).keys()]);
      } catch {}
      loadedAt = mtime;
    }
    return apiKey !== "" && matches(apiKey);
  };
}
