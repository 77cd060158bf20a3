import { beforeAll, describe, expect, test } from "bun:test";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import fc from "fast-check";
import { type Hex, hashTypedData } from "viem";
import { signDigest } from "../../src/core/eth-signature.ts";
import {
  attestationTypeName,
  attestationDigest,
  SEGMENT_HEADER_BYTES,
  EVM_DOMAIN,
  type EvmAttestation,
  evmAttestationOf,
  withEvmAttestation,
} from "../../src/proof/evm-attestation.ts";
import type { ProofBody, RevealedRange, TranscriptDirection } from "../../src/proof/format.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { hiddenRequestBody, legacySampleBody, preClaimsSampleBody, sampleBody } from "../proof/fixtures.ts";
import type { Claim } from "../../src/claims/claim.ts";
import { COMPARISONS } from "../../src/claims/grammar.ts";
import { type Account, Chain } from "../../testkit/evm/chain.ts";
import { attestationArgs, VerifierContract } from "../../testkit/evm/verifier.ts";

const hex = (bytes: Uint8Array): Hex => `0x${Buffer.from(bytes).toString("hex")}`;

/** viem's own EIP-712 implementation, from the typed data as a wallet would be given it. */
function viemDigest(attestation: EvmAttestation): Hex {
  const { tuple, revealed } = attestationArgs(attestation);
  const typeName = attestationTypeName(attestation.mode);
  return hashTypedData({
    domain: EVM_DOMAIN,
    types: {
      [typeName]: [
        { name: "requestId", type: "bytes16" },
        { name: "serverName", type: "string" },
        { name: "serverPort", type: "uint16" },
        { name: "connectionTime", type: "uint64" },
        { name: "responseTime", type: "uint64" },
        { name: "notarizedAt", type: "uint64" },
        { name: "sentLength", type: "uint32" },
        { name: "recvLength", type: "uint32" },
        { name: "requestHidden", type: "bool" },
        { name: "testTrustAnchor", type: "bool" },
        { name: "revealed", type: "bytes" },
        { name: "recipient", type: "address" },
        { name: "claims", type: "Claim[]" },
      ],
      Claim: [
        { name: "kind", type: "uint8" },
        { name: "subject", type: "string" },
        { name: "op", type: "string" },
        { name: "operand", type: "string" },
        { name: "holds", type: "bool" },
        { name: "value", type: "string" },
        { name: "commitment", type: "bytes32" },
      ],
    },
    primaryType: typeName,
    message: { ...tuple, revealed },
  });
}

/** A transcript direction of `length` bytes revealing the given disjoint, non-adjacent ranges with random bytes. */
const directionArb = fc
  .tuple(fc.integer({ min: 0, max: 3000 }), fc.uniqueArray(fc.integer({ min: 0, max: 3000 }), { maxLength: 8 }))
  .chain(([length, cuts]) => {
    const points = [...new Set(cuts.map((cut) => cut % (length + 1)))].sort((a, b) => a - b);
    const ranges: { start: number; end: number }[] = [];
    for (let i = 0; i + 1 < points.length; i += 2) {
      const [start, end] = [points[i]!, points[i + 1]!];
      const previous = ranges.at(-1);
      if (end > start && (!previous || start > previous.end)) ranges.push({ start, end });
    }
    return fc.tuple(...ranges.map((r) => fc.uint8Array({ minLength: r.end - r.start, maxLength: r.end - r.start }))).map(
      (datas): TranscriptDirection => ({
        length,
        revealed: ranges.map((r, i): RevealedRange => ({ ...r, data: Buffer.from(datas[i]!).toString("base64") })),
      }),
    );
  });

const text = fc.string({ unit: "grapheme", maxLength: 30 });
/** Any claim of any kind, its members as a notary could state them. */
const claimArb: fc.Arbitrary<Claim> = fc.oneof(
  fc.record({ kind: fc.constant("value" as const), subject: text, value: text }),
  fc.record({ kind: fc.constant("predicate" as const), subject: text, op: fc.constantFrom(...COMPARISONS), operand: text, holds: fc.boolean() }),
  fc.record({ kind: fc.constant("commitment" as const), subject: text, commitment: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${Buffer.from(b).toString("hex")}`) }),
);

const bodyArb = fc
  .record({
    requestId: fc.uuid(),
    serverName: fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }),
    connectionTime: fc.integer({ min: 0, max: 2 ** 40 }),
    responseTime: fc.integer({ min: 0, max: 2 ** 40 }),
    serverPort: fc.integer({ min: 1, max: 65535 }),
    notarizedAt: fc.maxSafeNat(),
    testTrustAnchor: fc.boolean(),
    mode: fc.constantFrom("mpc" as const, "proxy" as const),
    requestHidden: fc.boolean(),
    sent: directionArb,
    recv: directionArb,
    claims: fc.array(claimArb, { maxLength: 4 }),
    recipient: fc.option(fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => `0x${Buffer.from(b).toString("hex")}`), { nil: undefined }),
  })
  .map(({ sent, recv, mode, serverPort, requestHidden, recipient, ...fields }): ProofBody => ({
    ...sampleBody(generateKey("secp256k1")),
    ...fields,
    ...(recipient === undefined ? {} : { recipient }),
    mode,
    ...(mode === "proxy" ? { serverPort, request: requestHidden ? "hidden" : "revealed" } : {}),
    transcript: { sent, recv },
  }));

describe("EVM attestation digest", () => {
  let chain: Chain;
  let owner: Account;
  let verifier: VerifierContract;

  beforeAll(async () => {
    chain = await Chain.start();
    owner = await chain.account();
    verifier = await VerifierContract.deploy(chain, owner);
  }, 60_000);

  test("the TypeScript digest equals the contract's and viem's EIP-712 hash, for any body", async () => {
    await fc.assert(
      fc.asyncProperty(bodyArb, async (body) => {
        const attestation = evmAttestationOf(body);
        const ours = hex(attestationDigest(attestation));
        const onChain = await verifier.digest(attestation);
        expect(onChain).toMatchObject({ ok: true, value: ours });
        expect(viemDigest(attestation)).toBe(ours);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  test("every attested field changes the digest", () => {
    const body = sampleBody(generateKey("secp256k1"));
    const base = hex(attestationDigest(evmAttestationOf(body)));
    const sent = body.transcript.sent;
    const firstByte = Buffer.from(sent.revealed[0]!.data, "base64");
    firstByte[0] = firstByte[0]! ^ 1;
    const variants: ProofBody[] = [
      { ...body, requestId: "3f1c9a52-8d4e-4b7a-9c1e-2a6b5d8e7f02" },
      { ...body, serverName: `${body.serverName}.` },
      { ...body, connectionTime: body.connectionTime + 1 },
      { ...body, responseTime: body.responseTime! + 1 },
      { ...body, mode: "proxy", serverPort: 443 },
      { ...body, mode: "proxy", serverPort: 444 },
      { ...body, mode: "proxy", serverPort: 443, request: "hidden" },
      { ...body, notarizedAt: body.notarizedAt + 1 },
      { ...body, recipient: "0x00000000000000000000000000000000000000aa" },
      { ...body, claims: [] },
      { ...body, claims: [{ kind: "value", subject: "res:body:currency", value: '"USD"' }] },
      { ...body, claims: [{ kind: "value", subject: "res:body:token", value: '"EUR"' }] },
      { ...body, claims: [{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true }] },
      { ...body, claims: [{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: false }] },
      { ...body, claims: [{ kind: "predicate", subject: "res:body:balance", op: ">=", operand: "1000", holds: true }] },
      { ...body, testTrustAnchor: !body.testTrustAnchor },
      // A proxy-mode proof of the same data is another attestation type.
      { ...body, mode: "proxy" },
      { ...body, transcript: { ...body.transcript, sent: { ...sent, length: sent.length + 1 } } },
      { ...body, transcript: { ...body.transcript, recv: { ...body.transcript.recv, length: body.transcript.recv.length + 1 } } },
      { ...body, transcript: { ...body.transcript, sent: { ...sent, revealed: [{ ...sent.revealed[0]!, data: firstByte.toString("base64") }, ...sent.revealed.slice(1)] } } },
      // The same bytes attributed to the other direction.
      { ...body, transcript: { sent: body.transcript.recv, recv: sent } },
    ];
    const digests = variants.map((variant) => hex(attestationDigest(evmAttestationOf(variant))));
    expect(new Set([base, ...digests]).size).toBe(variants.length + 1);
  });

  test("a proof made before the exchange's times were attested keeps its older struct, which the contract no longer takes", () => {
    const key = generateKey("secp256k1");
    const legacy = evmAttestationOf(legacySampleBody(key));
    expect(legacy.era).toBe("legacy");
    const current = evmAttestationOf(sampleBody(key));
    expect(hex(attestationDigest(legacy))).not.toBe(hex(attestationDigest(current)));
    // The older struct's digest, as a wallet would have built it for such a proof.
    const { tuple: _tuple, revealed } = attestationArgs(current);
    const older = hashTypedData({
      domain: EVM_DOMAIN,
      types: {
        Attestation: [
          { name: "requestId", type: "bytes16" },
          { name: "serverName", type: "string" },
          { name: "connectionTime", type: "uint64" },
          { name: "notarizedAt", type: "uint64" },
          { name: "sentLength", type: "uint32" },
          { name: "recvLength", type: "uint32" },
          { name: "testTrustAnchor", type: "bool" },
          { name: "revealed", type: "bytes" },
        ],
      },
      primaryType: "Attestation",
      message: {
        requestId: hex(legacy.requestId),
        serverName: legacy.serverName,
        connectionTime: BigInt(legacy.connectionTime),
        notarizedAt: BigInt(legacy.notarizedAt),
        sentLength: legacy.sentLength,
        recvLength: legacy.recvLength,
        testTrustAnchor: legacy.testTrustAnchor,
        revealed,
      },
    });
    expect(hex(attestationDigest(legacy))).toBe(older);
    expect(() => attestationArgs(legacy)).toThrow("current struct only");
  });

  test("a proof made before claims keeps the struct without recipient and claims, which the contract no longer takes", () => {
    const key = generateKey("secp256k1");
    const before = evmAttestationOf(preClaimsSampleBody(key));
    expect(before.era).toBe("pre-claims");
    const { tuple, revealed } = attestationArgs({ ...before, era: "current" });
    const { recipient: _recipient, claims: _claims, ...members } = tuple;
    const older = hashTypedData({
      domain: EVM_DOMAIN,
      types: {
        Attestation: [
          { name: "requestId", type: "bytes16" },
          { name: "serverName", type: "string" },
          { name: "serverPort", type: "uint16" },
          { name: "connectionTime", type: "uint64" },
          { name: "responseTime", type: "uint64" },
          { name: "notarizedAt", type: "uint64" },
          { name: "sentLength", type: "uint32" },
          { name: "recvLength", type: "uint32" },
          { name: "requestHidden", type: "bool" },
          { name: "testTrustAnchor", type: "bool" },
          { name: "revealed", type: "bytes" },
        ],
      },
      primaryType: "Attestation",
      message: { ...members, revealed },
    });
    expect(hex(attestationDigest(before))).toBe(older);
    expect(() => attestationArgs(before)).toThrow("current struct only");
  });

  test("a request id that is not a UUID has no EVM attestation", () => {
    const body = { ...sampleBody(generateKey("secp256k1")), requestId: "not-a-uuid" };
    expect(() => evmAttestationOf(body)).toThrow("is not a UUID");
  });

  describe("the contract", () => {
    const notaryKey = generateKey("secp256k1");
    const body = withEvmAttestation(sampleBody(notaryKey), notaryKey);
    const attestation = evmAttestationOf(body);
    const signature = body.evm!.signature as Hex;

    beforeAll(async () => {
      await verifier.setNotary(body.evm!.address as Hex, true);
    });

    test("accepts an allowed notary's signature and names the notary", async () => {
      const outcome = await verifier.verify(attestation, signature);
      expect(outcome.ok && outcome.value.toLowerCase()).toBe(body.evm!.address);
    });

    test("refuses the high-s twin of a valid signature, a bad v and a short signature", async () => {
      const n = secp256k1.Point.CURVE().n;
      const s = BigInt(`0x${signature.slice(66, 130)}`);
      const v = Number.parseInt(signature.slice(130), 16);
      const twin = `${signature.slice(0, 66)}${(n - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
      // The twin is a valid ECDSA signature of the same digest (ecrecover alone would accept it).
      expect(secp256k1.Signature.fromBytes(Buffer.from(twin.slice(2, 130), "hex"), "compact").hasHighS()).toBe(true);
      expect(await verifier.verify(attestation, twin)).toEqual({ ok: false, error: "MalformedSignature" });
      expect(await verifier.verify(attestation, `${signature.slice(0, 130)}1d` as Hex)).toEqual({ ok: false, error: "MalformedSignature" });
      expect(await verifier.verify(attestation, signature.slice(0, 130) as Hex)).toEqual({ ok: false, error: "MalformedSignature" });
    });

    test("refuses a notary that is not, or no longer, on the allow-list", async () => {
      const stranger = generateKey("secp256k1");
      const foreign = withEvmAttestation(sampleBody(stranger), stranger);
      const outcome = await verifier.verify(evmAttestationOf(foreign), foreign.evm!.signature as Hex);
      expect(outcome).toEqual({ ok: false, error: "UnknownNotary" });
      await verifier.setNotary(body.evm!.address as Hex, false);
      expect(await verifier.verify(attestation, signature)).toEqual({ ok: false, error: "UnknownNotary" });
      await verifier.setNotary(body.evm!.address as Hex, true);
      expect((await verifier.verify(attestation, signature)).ok).toBe(true);
    });

    test("only the owner manages the allow-list", async () => {
      const intruder = await chain.account();
      await expect(verifier.setNotary(intruder.address, true, intruder)).rejects.toThrow("NotOwner");
    });

    test("refuses test-trust-anchor attestations unless the owner accepts them", async () => {
      const testBody = withEvmAttestation({ ...sampleBody(notaryKey), testTrustAnchor: true }, notaryKey);
      const testAttestation = evmAttestationOf(testBody);
      expect(await verifier.verify(testAttestation, testBody.evm!.signature as Hex)).toEqual({ ok: false, error: "TestTrustAnchor" });
      await verifier.setAcceptsTestTrustAnchor(true);
      expect((await verifier.verify(testAttestation, testBody.evm!.signature as Hex)).ok).toBe(true);
      await verifier.setAcceptsTestTrustAnchor(false);
    });

    test("refuses proxy-mode attestations: never as MPC ones, and as proxy ones only once the owner accepts them", async () => {
      const proxyBody = withEvmAttestation({ ...sampleBody(notaryKey), mode: "proxy" }, notaryKey);
      const proxyAttestation = evmAttestationOf(proxyBody);
      const proxySignature = proxyBody.evm!.signature as Hex;
      expect(proxyAttestation.mode).toBe("proxy");
      // Under the MPC type the digest differs: the signature recovers someone else.
      expect(await verifier.verify(proxyAttestation, proxySignature)).toEqual({ ok: false, error: "UnknownNotary" });
      expect(await verifier.verify(proxyAttestation, proxySignature, "proxy")).toEqual({ ok: false, error: "ProxyModeRefused" });
      await verifier.setAcceptsProxyMode(true);
      const accepted = await verifier.verify(proxyAttestation, proxySignature, "proxy");
      expect(accepted.ok && accepted.value.toLowerCase()).toBe(body.evm!.address);
      // Nor does an MPC attestation pass as a proxy one.
      expect(await verifier.verify(attestation, signature, "proxy")).toEqual({ ok: false, error: "UnknownNotary" });
      await verifier.setAcceptsProxyMode(false);
    });

    test("refuses an attestation whose request was hidden unless the owner accepts those too, whatever else it accepts", async () => {
      const hiddenBody = withEvmAttestation(hiddenRequestBody(notaryKey), notaryKey);
      const hidden = evmAttestationOf(hiddenBody);
      const hiddenSignature = hiddenBody.evm!.signature as Hex;
      expect(hidden).toMatchObject({ mode: "proxy", requestHidden: true, serverPort: 443 });
      await verifier.setAcceptsProxyMode(true);
      expect(await verifier.verify(hidden, hiddenSignature, "proxy")).toEqual({ ok: false, error: "HiddenRequestRefused" });
      const recv = hiddenBody.transcript.recv.revealed[0]!;
      expect(await verifier.verifiedRangeWithContext(hidden, hiddenSignature, "recv", recv.start, recv.start + 8)).toEqual({ ok: false, error: "HiddenRequestRefused" });
      // The flag is signed: the same attestation claiming a revealed request recovers another signer.
      expect(await verifier.verify({ ...hidden, requestHidden: false }, hiddenSignature, "proxy")).toEqual({ ok: false, error: "UnknownNotary" });
      await verifier.setAcceptsHiddenRequest(true);
      const accepted = await verifier.verify(hidden, hiddenSignature, "proxy");
      expect(accepted.ok && accepted.value.toLowerCase()).toBe(body.evm!.address);
      const read = await verifier.verifiedRangeWithContext(hidden, hiddenSignature, "recv", recv.start, recv.start + 8);
      expect(read.ok && read.value).toMatchObject({ requestHidden: true, serverPort: 443 });
      await verifier.setAcceptsHiddenRequest(false);
      await verifier.setAcceptsProxyMode(false);
    });

    test("serves revealed ranges only, from the right direction", async () => {
      const recv = body.transcript.recv;
      const response = Buffer.concat(recv.revealed.map((range) => Buffer.from(range.data, "base64"))).toString();
      const balanceAt = response.indexOf("1234");
      const inFirstRange = recv.revealed[0]!;
      expect(balanceAt).toBeGreaterThan(0);
      const read = await verifier.verifiedRange(attestation, signature, "recv", inFirstRange.start + balanceAt, inFirstRange.start + balanceAt + 4);
      expect(read.ok && Buffer.from(read.value).toString()).toBe("1234");
      // Across the hidden token, and the same offsets in the other direction.
      const hiddenEnd = recv.revealed[1]!.start;
      expect(await verifier.verifiedRange(attestation, signature, "recv", inFirstRange.end - 2, hiddenEnd + 2)).toEqual({ ok: false, error: "RangeNotRevealed" });
      expect(await verifier.verifiedRange(attestation, signature, "sent", recv.length - 4, recv.length)).toEqual({ ok: false, error: "RangeNotRevealed" });
    });

    test("a range comes with what it is evidence of: the attested server name, port, times and digest", async () => {
      const inFirstRange = body.transcript.recv.revealed[0]!;
      const read = await verifier.verifiedRangeWithContext(attestation, signature, "recv", inFirstRange.start, inFirstRange.start + 8);
      expect(read.ok).toBe(true);
      if (!read.ok) return;
      expect(Buffer.from(read.value.data).toString()).toBe("HTTP/1.1");
      expect(read.value.serverName).toBe(body.serverName);
      // An MPC notary never dials the server: no port is attested.
      expect(read.value.serverPort).toBe(0);
      expect(read.value.connectionTime).toBe(BigInt(body.connectionTime));
      expect(read.value.responseTime).toBe(BigInt(body.responseTime!));
      expect(read.value.notarizedAt).toBe(BigInt(body.notarizedAt));
      expect(read.value.requestHidden).toBe(false);
      // The digest a dapp records to use each attestation once: the one the notary signed.
      expect(read.value.attestationDigest).toBe(`0x${Buffer.from(attestationDigest(attestation)).toString("hex")}`);
    });

    test("a signed but malformed segment list is refused when read, never read past its end", async () => {
      // No notary packs segments like this; the contract must still not trust the lengths it is given.
      const truncated = { ...attestation, revealed: attestation.revealed.subarray(0, SEGMENT_HEADER_BYTES + 3) };
      const signed = signDigest(attestationDigest(truncated), notaryKey.privateKey) as Hex;
      expect((await verifier.verify(truncated, signed)).ok).toBe(true);
      expect(await verifier.verifiedRange(truncated, signed, "sent", 0, 2)).toEqual({ ok: false, error: "MalformedSegments" });
    });
  });
});
