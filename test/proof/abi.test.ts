import { describe, expect, test } from "bun:test";
import { encodeFunctionData, type Hex } from "viem";
import { type AbiType, encodeCall } from "../../src/proof/abi.ts";
import { evmAttestationOf, withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import { generateKey } from "../../src/proof/keys.ts";
import { registryCalldata } from "../../src/proof/registry-calldata.ts";
import { signProof } from "../../src/proof/sign.ts";
import { attestationArgs } from "../../src/proof/evm-calldata.ts";
import { compileContract } from "../../testkit/evm/compile.ts";
import { sampleBody } from "./fixtures.ts";

/** Our ABI encoding against viem's, from the compiled contract's own ABI: the same bytes, or a wallet would differ. */
describe("ABI encoding of registry calls", () => {
  const { abi } = compileContract("NotaryRegistry");
  const key = generateKey("secp256k1");
  const proof = (change: object) => signProof(withEvmAttestation({ ...sampleBody(key), ...change }, key), key);
  const signedArg = (p: ReturnType<typeof proof>) => {
    const { tuple, revealed } = attestationArgs(evmAttestationOf(p.body));
    return { attestation: tuple, revealed, signature: p.body.evm!.signature as Hex, proxy: p.body.mode === "proxy" };
  };

  test("register, exit and withdraw: their selectors", () => {
    expect(registryCalldata("register")).toBe(encodeFunctionData({ abi, functionName: "register", args: [] }));
    expect(registryCalldata("exit")).toBe(encodeFunctionData({ abi, functionName: "requestExit", args: [] }));
    expect(registryCalldata("withdraw")).toBe(encodeFunctionData({ abi, functionName: "withdraw", args: [] }));
  });

  test("slash: two attestations with claims, a recipient, empty and long strings, both modes", () => {
    const requestId = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d";
    const claims = [
      { kind: "predicate" as const, subject: "res:body:balance", op: ">" as const, operand: "1000", holds: true },
      { kind: "value" as const, subject: "res:body:name", value: `"${"x".repeat(70)}"` },
      { kind: "commitment" as const, subject: "res:body:balance", commitment: `0x${"ab".repeat(32)}` },
    ];
    const a = proof({ requestId, notarizedAt: 1, claims, recipient: "0x00000000000000000000000000000000000000c1" });
    const b = proof({ requestId, notarizedAt: 2, mode: "proxy", serverPort: 443, claims: [] });
    expect(registryCalldata("slash", [a, b])).toBe(encodeFunctionData({ abi, functionName: "slash", args: [signedArg(a), signedArg(b)] }));
  });

  test("a pair that is no equivocation is refused before any calldata", () => {
    const a = proof({ requestId: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8e" });
    expect(() => registryCalldata("slash", [a, a])).toThrow("not an equivocation: they attest the same statement");
    expect(() => registryCalldata("slash", [a, proof({ requestId: "6a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8e" })])).toThrow("two request ids");
    const other = generateKey("secp256k1");
    const foreign = signProof(withEvmAttestation({ ...sampleBody(other), requestId: a.body.requestId }, other), other);
    expect(() => registryCalldata("slash", [a, foreign])).toThrow("two notaries signed them");
    expect(() => registryCalldata("slash", [a])).toThrow("slash takes two proofs");
  });

  test("nested dynamic types: an array of tuples of strings, as viem writes it", () => {
    const item: AbiType = { kind: "tuple", components: [{ kind: "string" }, { kind: "uint", bits: 8 }, { kind: "bytes" }] };
    const values = [["", 1, "0x"], ["a".repeat(33), 255, `0x${"01".repeat(40)}`]];
    const ours = encodeCall("f", [{ kind: "array", item }, { kind: "bool" }], [values, true]);
    const viem = encodeFunctionData({
      abi: [{ type: "function", name: "f", stateMutability: "pure", outputs: [], inputs: [{ type: "tuple[]", name: "x", components: [{ type: "string", name: "s" }, { type: "uint8", name: "n" }, { type: "bytes", name: "b" }] }, { type: "bool", name: "y" }] }],
      functionName: "f",
      args: [values.map(([s, n, b]) => ({ s: s as string, n: n as number, b: b as Hex })), true],
    });
    expect(ours).toBe(viem);
  });
});
