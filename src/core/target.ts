/** The target of a /proxy call: the T-PROXY-URL it names. Which targets may be dialled is src/core/target-policy.ts. */
import { AppError } from "./errors.ts";
import { tlsServerName } from "./server-name.ts";
import type { TargetEndpoint } from "./target-policy.ts";

export interface Target extends TargetEndpoint {
  url: URL;
  /** Origin-form request target: path and query. */
  pathAndQuery: string;
}

export function parseTargetUrl(raw: string | null): Target {
  if (!raw) throw new AppError("invalid_header", "T-PROXY-URL is required");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError("invalid_header", "T-PROXY-URL is not a valid URL");
  }
  if (url.protocol !== "https:") throw new AppError("invalid_header", "T-PROXY-URL must be an https URL");
  if (url.username || url.password) throw new AppError("invalid_header", "T-PROXY-URL must not carry credentials");
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  // A fully qualified name's trailing dot goes: the host is dialled, named and proven by its TLS name (server-name.ts).
  const serverName = tlsServerName(host);
  if (serverName === null) throw new AppError("invalid_header", `T-PROXY-URL's host ${host} has an empty label`);
  return { url, serverName, port: Number(url.port || 443), pathAndQuery: `${url.pathname}${url.search}` };
}

/** The Host header's value for a target: its name, and its port unless 443. */
export const hostOf = (target: TargetEndpoint): string => (target.port === 443 ? target.serverName : `${target.serverName}:${target.port}`);
