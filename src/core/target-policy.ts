/**
 * Which targets may be dialled, for any mode and either role: a prover's policy (PROVER_ALLOWED_HOSTS, …) and a
 * notary's (its `proxy` section) alike. The target is resolved once and the address checked is the one dialled.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { AppError } from "./errors.ts";
import { isPublicAddress } from "./address-policy.ts";
import { serverNameKey } from "./server-name.ts";

/** What a policy decides on: the host name and port to dial. */
export interface TargetEndpoint {
  /** Host name for TLS (SNI and certificate check), without a trailing dot (server-name.ts); IPv6 literals without brackets. */
  serverName: string;
  port: number;
}

export interface TargetPolicy {
  allowPrivateTargets: boolean;
  /** `host:port` → address, as curl's --resolve. */
  resolve: ReadonlyMap<string, string>;
  /** Host patterns (`api.example.com`, `*.example.com`); empty = any host. */
  allowedHosts: readonly string[];
  /** Target ports allowed (PROVER_ALLOWED_PORTS); empty = any port. */
  allowedPorts: readonly number[];
  /** The settings named in refusals; the prover's variables unless given (a notary names its YAML keys). */
  settingNames?: { hosts: string; ports: string };
}

const PROVER_SETTINGS = { hosts: "PROVER_ALLOWED_HOSTS", ports: "PROVER_ALLOWED_PORTS" };

export function parseResolveList(text: string | undefined, setting = "PROVER_RESOLVE"): Map<string, string> {
  const map = new Map<string, string>();
  for (const entry of (text ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const match = /^([^:]+):(\d+):(.+)$/.exec(entry);
    if (!match || !isIP(match[3]!.replace(/^\[(.*)\]$/, "$1"))) {
      throw new AppError("config_invalid", `${setting}: "${entry}" is not host:port:address`);
    }
    map.set(`${serverNameKey(match[1]!)}:${match[2]}`, match[3]!.replace(/^\[(.*)\]$/, "$1"));
  }
  return map;
}

/** Whether a host matches a pattern of the list; names compare as server names do (server-name.ts), so `api.example.com.` is `api.example.com`. */
export function hostAllowed(host: string, patterns: readonly string[]): boolean {
  if (patterns.length === 0) return true;
  const name = serverNameKey(host);
  return patterns.some((p) => {
    const pattern = serverNameKey(p);
    return pattern.startsWith("*.") ? name.endsWith(pattern.slice(1)) && name.length > pattern.length - 1 : name === pattern;
  });
}

/** Throws target_forbidden when the policy's host or port list leaves the target out (no lookup). */
export function checkTargetAllowed(target: TargetEndpoint, policy: TargetPolicy): void {
  const names = policy.settingNames ?? PROVER_SETTINGS;
  if (policy.allowedPorts.length > 0 && !policy.allowedPorts.includes(target.port)) {
    throw new AppError("target_forbidden", `port ${target.port} is not in ${names.ports} (${policy.allowedPorts.join(", ")})`);
  }
  if (!hostAllowed(target.serverName, policy.allowedHosts)) {
    throw new AppError("target_forbidden", `host ${target.serverName} is not in ${names.hosts}`);
  }
}

/** Resolves the target once and checks the address that will be dialled. */
export async function resolveTarget<T extends TargetEndpoint>(target: T, policy: TargetPolicy): Promise<T & { address: string }> {
  checkTargetAllowed(target, policy);
  let address = policy.resolve.get(`${serverNameKey(target.serverName)}:${target.port}`);
  if (!address && isIP(target.serverName)) address = target.serverName;
  if (!address) {
    try {
      address = (await lookup(target.serverName, { verbatim: true })).address;
    } catch {
      throw new AppError("target_unresolvable", `could not resolve host ${target.serverName}`);
    }
  }
  if (!policy.allowPrivateTargets && !isPublicAddress(address)) {
    throw new AppError("target_forbidden", `host ${target.serverName} resolves to a non-public address`);
  }
  return { ...target, address };
}
