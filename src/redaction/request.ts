/** The redaction headers of a `/proxy` request: what to hide, and whether a pattern may match nothing. */
import { AppError } from "../errors.ts";
import { parseRedactions, type RedactionPattern } from "./patterns.ts";

export interface RedactionRequest {
  /** One per `T-REDACTED` entry, in order: entry n is `patterns[n - 1]`. */
  patterns: RedactionPattern[];
  /** `T-REDACTED-UNMATCHED: allow`: a proof may list entries that matched nothing (default: no proof). */
  allowUnmatched: boolean;
}

function parseUnmatchedPolicy(value: string | null): boolean {
  if (value === null) return false;
  const policy = value.trim().toLowerCase();
  if (policy === "allow") return true;
  if (policy === "refuse") return false;
  throw new AppError("invalid_header", "T-REDACTED-UNMATCHED must be allow or refuse");
}

export function parseRedactionRequest(headers: Headers): RedactionRequest {
  return {
    patterns: parseRedactions(headers.get("t-redacted") ?? undefined),
    allowUnmatched: parseUnmatchedPolicy(headers.get("t-redacted-unmatched")),
  };
}
