import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createLogger } from "../../src/base/log.ts";
import { type NotaryServer, startNotaryServer } from "../../src/app/notary.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { type RunningProver, SOURCE_CLI, startProver } from "../../testkit/prover.ts";
import { isPublicAddress } from "../../src/core/address-policy.ts";
import { type TargetPolicy, hostAllowed, parseResolveList, resolveTarget } from "../../src/core/target-policy.ts";
import { parseTargetUrl } from "../../src/core/target.ts";
import { localVerifiers } from "../../src/engine/verifier.ts";

const strict: TargetPolicy = { allowPrivateTargets: false, resolve: new Map(), allowedHosts: [], allowedPorts: [] };

describe("isPublicAddress", () => {
  test.each([
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "this network"],
    ["10.0.0.1", "private"],
    ["100.64.0.1", "shared (CGNAT)"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback, end of range"],
    ["169.254.169.254", "cloud metadata"],
    ["169.254.0.1", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private, end of range"],
    ["192.0.0.1", "IETF assignments"],
    ["192.0.2.1", "documentation"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::", "IPv6 unspecified"],
    ["::1", "IPv6 loopback"],
    ["0:0:0:0:0:0:0:1", "IPv6 loopback, long form"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback, dotted"],
    ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
    ["0:0:0:0:0:ffff:7f00:0001", "IPv4-mapped loopback, long form"],
    ["::ffff:169.254.169.254", "IPv4-mapped metadata"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped metadata, hex"],
    ["::ffff:10.1.2.3", "IPv4-mapped private"],
    ["::127.0.0.1", "IPv4-compatible loopback"],
    ["64:ff9b::7f00:1", "NAT64 of loopback"],
    ["2002:7f00:1::", "6to4 of loopback"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local with a zone"],
    ["fec0::1", "site-local"],
    ["fc00::1", "unique local"],
    ["fd00:ec2::254", "AWS metadata over IPv6"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["::ffff:8.8.8.8", "IPv4-mapped, even of a public address"],
    ["::ffff:0:808:808", "IPv4-translated (::ffff:0:0:0/96)"],
    ["::ffff:0:7f00:1", "IPv4-translated loopback"],
    ["::8.8.8.8", "IPv4-compatible, even of a public address"],
    ["2001::1", "Teredo"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo, a real-looking address"],
    ["2001:2::1", "benchmarking (IETF assignments 2001::/23)"],
    ["192.88.99.1", "6to4 relay anycast"],
    ["192.88.99.255", "6to4 relay anycast, end of range"],
    ["100::1", "discard-only"],
    ["100::ffff:ffff:ffff:ffff", "discard-only, end of range"],
    ["64:ff9b:1::808:808", "local-use NAT64"],
  ])("refuses %s (%s)", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  test.each([
    ["1.1.1.1"],
    ["8.8.8.8"],
    ["93.184.216.34"],
    ["172.32.0.1"], // just past 172.16/12
    ["100.128.0.1"], // just past 100.64/10
    ["169.255.0.1"],
    ["223.255.255.255"],
    ["2606:4700:4700::1111"],
    ["2a00:1450:4001:82a::200e"],
    ["64:ff9b::808:808"],
    ["192.88.100.1"], // just past 192.88.99/24
    ["2001:200::1"], // just past 2001::/23
    ["100:0:0:1::1"], // just past 100::/64
    ["2002:808:808::1"],
  ])("allows %s", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  test.each([["localhost"], ["example.com"], [""], ["2130706433"], ["0177.0.0.1"], ["1.2.3"], ["not an ip"]])(
    "refuses %p, which is not an IP address",
    (text) => {
      expect(isPublicAddress(text)).toBe(false);
    },
  );

  test("IPv6 forms carrying an IPv4 address are refused, NAT64 agrees with the IPv4 address", () => {
    fc.assert(
      fc.property(fc.ipV4(), (v4) => {
        const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
        const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
        expect(isPublicAddress(`::ffff:${v4}`)).toBe(false);
        expect(isPublicAddress(`::ffff:${hex}`)).toBe(false);
        expect(isPublicAddress(`::ffff:0:${hex}`)).toBe(false);
        expect(isPublicAddress(`2001:0:${hex}::1`)).toBe(false);
        expect(isPublicAddress(`64:ff9b::${hex}`)).toBe(isPublicAddress(v4));
      }),
      { numRuns: 2000 },
    );
  });

  test("random text never passes as an address, and never throws", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (text) => {
        const verdict = isPublicAddress(text);
        if (verdict) expect(/^[0-9a-f:.]+$/i.test(text)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("parseTargetUrl", () => {
  // WHATWG URL parsing turns these spellings into the canonical dotted or bracketed form before any check.
  test.each([
    ["https://2130706433/", "127.0.0.1"],
    ["https://0177.0.0.1/", "127.0.0.1"],
    ["https://0x7f.1/", "127.0.0.1"],
    ["https://127.1/", "127.0.0.1"],
    ["https://0/", "0.0.0.0"],
    ["https://[::ffff:127.0.0.1]/", "::ffff:7f00:1"],
    ["https://[::ffff:7f00:1]/", "::ffff:7f00:1"],
    ["https://[0:0:0:0:0:ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe"],
    ["https://LOCALHOST/", "localhost"],
    // A fully qualified name: TLS names the host without the trailing dot (RFC 6066), and so does everything after.
    ["https://API.Example.COM./x", "api.example.com"],
    ["https://localhost./", "localhost"],
    ["https://127.0.0.1./", "127.0.0.1"],
  ])("normalizes %s to %s", (url, serverName) => {
    expect(parseTargetUrl(url).serverName).toBe(serverName);
  });

  test("keeps port, path and query", () => {
    const target = parseTargetUrl("https://api.example.com:8443/a/b?c=1&d=2");
    expect(target).toMatchObject({ serverName: "api.example.com", port: 8443, pathAndQuery: "/a/b?c=1&d=2" });
    expect(parseTargetUrl("https://api.example.com").port).toBe(443);
    expect(parseTargetUrl("https://api.example.com.:8443/a?b")).toMatchObject({ serverName: "api.example.com", port: 8443, pathAndQuery: "/a?b" });
  });

  test.each([
    [null, "required"],
    ["", "required"],
    ["not a url", "not a valid URL"],
    ["http://api.example.com/", "https"],
    ["ftp://api.example.com/", "https"],
    ["file:///etc/passwd", "https"],
    ["gopher://127.0.0.1:6379/", "https"],
    ["https://user:pass@api.example.com/", "credentials"],
    ["https://[fe80::1%25eth0]/", "not a valid URL"],
    ["https://api.example.com../", "T-PROXY-URL's host api.example.com.. has an empty label"],
    ["https://a..b/", "T-PROXY-URL's host a..b has an empty label"],
    ["https://./", "T-PROXY-URL's host . has an empty label"],
  ])("refuses %p", (raw, message) => {
    try {
      parseTargetUrl(raw);
      throw new Error("accepted");
    } catch (error) {
      expect(error).toMatchObject({ code: "invalid_header" });
      expect((error as Error).message).toContain(message);
    }
  });
});

describe("hostAllowed", () => {
  test("an empty list allows any host", () => {
    expect(hostAllowed("anything.test", [])).toBe(true);
  });
  test("exact names and wildcards, case-insensitive", () => {
    const list = ["api.example.com", "*.data.example.org"];
    expect(hostAllowed("API.Example.com", list)).toBe(true);
    expect(hostAllowed("x.data.example.org", list)).toBe(true);
    expect(hostAllowed("a.b.data.example.org", list)).toBe(true);
    expect(hostAllowed("data.example.org", list)).toBe(false); // the wildcard needs a label
    expect(hostAllowed("evildata.example.org", list)).toBe(false);
    expect(hostAllowed("example.com", list)).toBe(false);
    expect(hostAllowed("api.example.com.evil.test", list)).toBe(false);
  });
  test("a fully qualified name's trailing dot, in the host or in a pattern, names the same host", () => {
    expect(hostAllowed("api.example.com.", ["api.example.com"])).toBe(true);
    expect(hostAllowed("api.example.com", ["API.example.com."])).toBe(true);
    expect(hostAllowed("x.data.example.org", ["*.data.example.org."])).toBe(true);
    expect(hostAllowed("data.example.org.", ["*.data.example.org"])).toBe(false);
    expect(hostAllowed("api.example.com..", ["api.example.com"])).toBe(false);
  });
});

describe("resolveTarget", () => {
  test.each([
    ["https://2130706433/"],
    ["https://0177.0.0.1/"],
    ["https://[::ffff:7f00:1]/"],
    ["https://[::ffff:127.0.0.1]/"],
    ["https://0.0.0.0/"],
    ["https://169.254.169.254/latest/meta-data/"],
    ["https://[fd00:ec2::254]/"],
    ["https://[::1]/"],
    ["https://localhost/"],
  ])("refuses %s", async (url) => {
    await expect(resolveTarget(parseTargetUrl(url), strict)).rejects.toMatchObject({ code: "target_forbidden" });
  });

  test("allows a private address only when configured to", async () => {
    const allowed = await resolveTarget(parseTargetUrl("https://127.0.0.1:8443/x"), { ...strict, allowPrivateTargets: true });
    expect(allowed).toMatchObject({ address: "127.0.0.1", port: 8443 });
  });

  test("checks the address a name maps to, which is the address dialled", async () => {
    const resolve = parseResolveList("api.example.com:443:10.0.0.5,pub.example.com:443:8.8.8.8");
    await expect(resolveTarget(parseTargetUrl("https://api.example.com/"), { ...strict, resolve })).rejects.toMatchObject({
      code: "target_forbidden",
    });
    const ok = await resolveTarget(parseTargetUrl("https://pub.example.com/"), { ...strict, resolve });
    expect(ok.address).toBe("8.8.8.8");
    expect(ok.serverName).toBe("pub.example.com");
  });

  test("a host named with a trailing dot, in the URL or in the resolve list, is the same host", async () => {
    const plain = parseResolveList("pub.example.com:443:8.8.8.8");
    expect(await resolveTarget(parseTargetUrl("https://pub.example.com./"), { ...strict, resolve: plain })).toMatchObject({ serverName: "pub.example.com", address: "8.8.8.8" });
    const dotted = parseResolveList("PUB.example.com.:443:8.8.4.4");
    expect(await resolveTarget(parseTargetUrl("https://pub.example.com/"), { ...strict, resolve: dotted })).toMatchObject({ serverName: "pub.example.com", address: "8.8.4.4" });
  });

  test("refuses hosts outside PROVER_ALLOWED_HOSTS before resolving them", async () => {
    const policy = { ...strict, allowedHosts: ["*.example.com"] };
    await expect(resolveTarget(parseTargetUrl("https://8.8.8.8/"), policy)).rejects.toMatchObject({ code: "target_forbidden" });
    await expect(resolveTarget(parseTargetUrl("https://example.org/"), policy)).rejects.toMatchObject({ code: "target_forbidden" });
  });

  test("refuses ports outside PROVER_ALLOWED_PORTS before resolving, naming the setting", async () => {
    const policy = { ...strict, allowedPorts: [443, 8443] };
    await expect(resolveTarget(parseTargetUrl("https://no-such-host.invalid:22/"), policy)).rejects.toMatchObject({
      code: "target_forbidden",
      message: expect.stringContaining("PROVER_ALLOWED_PORTS"),
    });
    const ok = await resolveTarget(parseTargetUrl("https://8.8.8.8:8443/"), policy);
    expect(ok.port).toBe(8443);
  });

  test("a name that does not resolve is target_unresolvable", async () => {
    await expect(resolveTarget(parseTargetUrl("https://no-such-host.invalid/"), strict)).rejects.toMatchObject({
      code: "target_unresolvable",
    });
  });
});

describe("through a real prover with a remote notary", () => {
  let prover: RunningProver;
  let notary: NotaryServer;

  beforeAll(async () => {
    notary = startNotaryServer({
      verifiers: localVerifiers({ threads: 1 }),
      host: "127.0.0.1",
      port: 0,
      sessions: { concurrency: 1, maxSentData: 1024, maxRecvData: 2048, timeoutMs: 60_000, connectTimeoutMs: 1_000 },
      key: generateKey("secp256k1"),
      testTrustAnchor: true,
      log: createLogger({ level: "error" }),
    });
    prover = await startProver(SOURCE_CLI, 443, {
      PROVER_NOTARY_URL: notary.url,
      PROVER_ALLOW_PRIVATE_TARGETS: "0",
      PROVER_ALLOWED_PORTS: "443,8443",
    });
  }, 60_000);

  afterAll(async () => {
    await prover?.stop();
    await notary?.stop(0);
  }, 120_000);

  const proxy = (url: string) => fetch(`${prover.url}/proxy`, { headers: { "t-proxy-url": url, "t-request-id": crypto.randomUUID() } });

  test.each([
    ["https://[::ffff:8.8.8.8]/", "non-public"],
    ["https://[::ffff:0:808:808]/", "non-public"],
    ["https://[2001::1]/", "non-public"],
    ["https://192.88.99.1/", "non-public"],
    ["https://[100::1]/", "non-public"],
    ["https://8.8.8.8:6379/", "PROVER_ALLOWED_PORTS"],
    ["https://8.8.8.8:22/", "PROVER_ALLOWED_PORTS"],
  ])("/proxy to %s is 403 target_forbidden (%s)", async (url, reason) => {
    const response = await proxy(url);
    expect(response.status).toBe(403);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("target_forbidden");
    expect(error.message).toContain(reason);
  });

  test("/info shows the notary's key but not where it runs", async () => {
    const response = await fetch(`${prover.url}/info`);
    expect(response.status).toBe(200);
    const text = await response.text();
    const info = JSON.parse(text) as { notary: { embedded: boolean; publicKey: string } };
    expect(info.notary.embedded).toBe(false);
    expect(info.notary.publicKey).toContain("BEGIN PUBLIC KEY");
    expect(text).not.toContain(notary.url);
  });
});
