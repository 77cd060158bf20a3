/**
 * A notary offering proxy mode, over its real routes in this process, for targets on loopback named TARGET_HOST:
 * the settings the proxy-mode tests share; each test file gives the limits it is about.
 */
import { type NotaryServer, startNotaryServer } from "../../../../src/app/notary.ts";
import { type Logger, createLogger } from "../../../../src/base/log.ts";
import { localVerifiers } from "../../../../src/engine/verifier.ts";
import type { ProxyModeOptions } from "../../../../src/notary/proxy-mode/mode.ts";
import type { NotaryAuth } from "../../../../src/notary/admission.ts";
import { type NotaryKey, generateKey } from "../../../../src/proof/keys.ts";
import { TARGET_HOST } from "../../../../testkit/tls-fixture.ts";

type ProxySettings = Omit<ProxyModeOptions, "policy">;

export interface ProxyNotaryOptions {
  /** The target ports it may dial, TARGET_HOST resolving to 127.0.0.1 on each. */
  ports: number[];
  /** Sessions at once. */
  concurrency?: number;
  /** Proxy-mode settings other than these defaults. */
  proxy?: Partial<ProxySettings>;
  key?: NotaryKey;
  /** Who may use its sessions; unset = anyone. */
  auth?: NotaryAuth;
  log?: Logger;
}

const DEFAULTS: ProxySettings = {
  maxSentData: 4096,
  maxRecvData: 4096,
  sessionTimeoutMs: 30_000,
  idleTimeoutMs: 10_000,
  connectTimeoutMs: 5_000,
  maxPendingConnects: 4,
  attestationWindowMs: 10_000,
  maxHiddenSpanBytes: 64,
  trustAnchorsPem: [],
};

export function startProxyNotary({ ports, concurrency = 4, proxy = {}, key = generateKey("secp256k1"), auth, log = createLogger({ level: "error" }) }: ProxyNotaryOptions): NotaryServer {
  return startNotaryServer({
    host: "127.0.0.1",
    port: 0,
    sessions: { concurrency, maxSentData: 1024, maxRecvData: 2048, timeoutMs: 30_000, connectTimeoutMs: 5_000 },
    verifiers: localVerifiers({ threads: 1 }),
    key,
    auth,
    testTrustAnchor: true,
    proxy: {
      ...DEFAULTS,
      ...proxy,
      policy: {
        allowPrivateTargets: true,
        resolve: new Map(ports.map((port) => [`${TARGET_HOST}:${port}`, "127.0.0.1"])),
        allowedHosts: [TARGET_HOST],
        allowedPorts: ports,
        settingNames: { hosts: "proxy.allowed_hosts", ports: "proxy.allowed_ports" },
      },
    },
    log,
  });
}
