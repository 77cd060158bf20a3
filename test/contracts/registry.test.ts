import { beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import type { Claim } from "../../src/claims/claim.ts";
import { AppError } from "../../src/core/errors.ts";
import { NotaryMetrics } from "../../src/metrics/notary.ts";
import { attest } from "../../src/notary/attestation.ts";
import { memoryLedger } from "../../src/notary/ledger.ts";
import type { NotaryMode } from "../../src/notary/modes.ts";
import { evmAttestationOf, notaryEvmAddress, withEvmAttestation } from "../../src/proof/evm-attestation.ts";
import type { ProofBody } from "../../src/proof/format.ts";
import { generateKey, type NotaryKey } from "../../src/proof/keys.ts";
import { keptLog } from "../../testkit/kept-log.ts";
import { type Account, Chain } from "../../testkit/evm/chain.ts";
import { RegistryContract, type SignedAttestation } from "../../testkit/evm/registry.ts";
import { REQUEST, directionHiding, hiddenRequestBody, sampleBody } from "../proof/fixtures.ts";
import { signProof } from "../../src/proof/sign.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../../testkit/env.ts";
import { cliInProcess } from "../../testkit/cli-in-process.ts";
import { proxyTranscript } from "../notary/support/transcripts.ts";

/**
 * contracts/NotaryRegistry.sol on the in-process EVM: notaries bond a stake from their own attestation address,
 * a quorum of bonded notaries' attestations of the same claims is accepted, a notary that signed two different
 * statements for one request id is slashed by whoever shows them (the reporter paid, the rest burned), and nothing
 * else slashes anyone.
 */
const ETHER = 10n ** 18n;
const MINIMUM = 1n * ETHER;
const DELAY_S = 7 * 24 * 3600;
const BURN = "0x000000000000000000000000000000000000dEaD";
/** What a transaction pays per gas on the test chain: its blocks' base fee (1) and the priority fee (1). */
const GAS_PRICE = 2n;
const CLAIMS: Claim[] = [{ kind: "predicate", subject: "res:body:balance", op: ">", operand: "1000", holds: true }];

let chain: Chain;
let deployer: Account;
let registry: RegistryContract;
/** Three notaries: their keys, and the accounts of their attestation addresses. */
const keys: NotaryKey[] = [];
const accounts: Account[] = [];

/** An attestation by `key` of the sample exchange with `claims`, for `requestId`, signed at `notarizedAt`. */
function signed(key: NotaryKey, change: Partial<ProofBody> = {}): SignedAttestation {
  const body = withEvmAttestation({ ...sampleBody(key), claims: CLAIMS, ...change }, key);
  return { attestation: evmAttestationOf(body), signature: body.evm!.signature as Hex };
}

const address = (key: NotaryKey) => notaryEvmAddress(key)! as Hex;
/** Attestations ordered as the registry wants them: by signer address, ascending. */
const ascending = (list: SignedAttestation[], of: NotaryKey[]) =>
  list.map((entry, i) => ({ entry, signer: BigInt(address(of[i]!)) })).sort((a, b) => (a.signer < b.signer ? -1 : 1)).map(({ entry }) => entry);

beforeAll(async () => {
  chain = await Chain.start();
  deployer = await chain.account();
  registry = await RegistryContract.deploy(chain, deployer, MINIMUM, DELAY_S);
  for (let i = 0; i < 3; i++) {
    const key = generateKey("secp256k1");
    keys.push(key);
    accounts.push(await chain.accountOf(key.privateKey));
  }
}, 60_000);

describe("the notary registry", () => {
  test("a notary bonds at least the minimum stake from its attestation address", async () => {
    expect(await registry.register(accounts[0]!, MINIMUM - 1n)).toEqual({ ok: false, error: "StakeTooSmall" });
    for (const account of accounts) expect((await registry.register(account, MINIMUM)).ok).toBe(true);
    expect(await registry.isBonded(deployer, accounts[0]!.address)).toBe(true);
    expect(await registry.stakeOf(deployer, accounts[0]!.address)).toBe(MINIMUM);
  });

  test("a 2-of-3 quorum of one statement is accepted, with its claims and signers; fewer, or a repeated signer, is not", async () => {
    const requestId = "6d3a1c9e-2b4f-4e8a-9c7d-5f1e0a2b3c4d";
    const all = ascending(keys.map((key, i) => signed(key, { requestId, notarizedAt: 1_800_000_000_000 + i })), keys);
    const two = all.slice(0, 2);
    const accepted = await registry.verifiedQuorumClaims(deployer, two, 2);
    expect(accepted.ok).toBe(true);
    if (!accepted.ok) return;
    expect(accepted.value.claims.map(({ subject, op, operand, holds }) => ({ subject, op, operand, holds }))).toEqual([{ subject: "res:body:balance", op: ">", operand: "1000", holds: true }]);
    const lowest = keys.map(address).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)).slice(0, 2);
    expect(accepted.value.notaries.map((n) => n.toLowerCase())).toEqual(lowest);
    expect((await registry.verifiedQuorumClaims(deployer, all, 3)).ok).toBe(true);
    expect(await registry.verifiedQuorumClaims(deployer, two, 3)).toEqual({ ok: false, error: "QuorumNotMet" });
    expect(await registry.verifiedQuorumClaims(deployer, [two[0]!, two[0]!], 2)).toEqual({ ok: false, error: "SignersNotAscending" });
    expect(await registry.verifiedQuorumClaims(deployer, [two[1]!, two[0]!], 2)).toEqual({ ok: false, error: "SignersNotAscending" });
    // One of them stating something else: no quorum of that statement.
    const [lowKey, highKey] = [...keys].sort((a, b) => (BigInt(address(a)) < BigInt(address(b)) ? -1 : 1));
    const disagreeing = [signed(lowKey!, { requestId }), signed(highKey!, { requestId, claims: [{ ...CLAIMS[0]!, holds: false } as Claim] })];
    expect(await registry.verifiedQuorumClaims(deployer, disagreeing, 2)).toEqual({ ok: false, error: "QuorumDisagrees" });
    const testAnchor = [signed(lowKey!, { requestId, testTrustAnchor: true }), signed(highKey!, { requestId, testTrustAnchor: true })];
    expect(await registry.verifiedQuorumClaims(deployer, testAnchor, 2)).toEqual({ ok: false, error: "TestTrustAnchor" });
  });

  test("the same claims of two different requests, for two recipients, or of a request not shown, are no quorum", async () => {
    const [lowKey, highKey] = [...keys].sort((a, b) => (BigInt(address(a)) < BigInt(address(b)) ? -1 : 1));
    const pair = (change: Partial<ProofBody>) => [signed(lowKey!), signed(highKey!, change)];
    // Another account's balance, say: the claim "balance > 1000" of /v1/balanc2 is not one of /v1/balance.
    const otherRequest = { ...sampleBody(highKey!).transcript, sent: directionHiding(REQUEST.replace("/v1/balance", "/v1/balanc2"), []) };
    expect(await registry.verifiedQuorumClaims(deployer, pair({ transcript: otherRequest }), 2)).toEqual({ ok: false, error: "QuorumDisagrees" });
    expect(await registry.verifiedQuorumClaims(deployer, pair({ recipient: `0x${"c0".repeat(20)}` }), 2)).toEqual({ ok: false, error: "QuorumDisagrees" });
    const hidden = (key: NotaryKey) => signed(key, { ...hiddenRequestBody(key), claims: CLAIMS });
    expect(await registry.verifiedQuorumClaims(deployer, [hidden(lowKey!), hidden(highKey!)], 2)).toEqual({ ok: false, error: "RequestNotShown" });
    // A request line with a hidden byte (a token in the query) is not shown whole either.
    const cut = { ...sampleBody(lowKey!).transcript, sent: directionHiding(REQUEST, [{ start: 6, end: 9 }]) };
    expect(await registry.verifiedQuorumClaims(deployer, [signed(lowKey!, { transcript: cut }), signed(highKey!, { transcript: cut })], 2)).toEqual({ ok: false, error: "RequestNotShown" });
  });

  test("a notary that is not bonded does not count: never registered, or exiting", async () => {
    const stranger = generateKey("secp256k1");
    const [low] = [...keys].sort((a, b) => (BigInt(address(a)) < BigInt(address(b)) ? -1 : 1));
    const pair = ascending([signed(low!), signed(stranger)], [low!, stranger]);
    expect(await registry.verifiedQuorumClaims(deployer, pair, 2)).toEqual({ ok: false, error: "NotBonded" });
  });

  test("two different statements for one request id slash their notary: the reporter takes half, half is burned", async () => {
    const key = keys[2]!;
    const account = accounts[2]!;
    const reporter = await chain.account();
    const requestId = "1e2d3c4b-5a69-4788-97a6-b5c4d3e2f1a0";
    const first = signed(key, { requestId, notarizedAt: 1_800_000_000_001 });
    const second = signed(key, { requestId, notarizedAt: 1_800_000_000_002, claims: [{ ...CLAIMS[0]!, holds: false } as Claim] });
    // Not equivocation: the same statement twice, two request ids, two signers, or a signature that is not one.
    expect(await registry.slash(reporter, first, first)).toEqual({ ok: false, error: "NotEquivocation" });
    expect(await registry.slash(reporter, first, signed(key, { requestId: "2e2d3c4b-5a69-4788-97a6-b5c4d3e2f1a0" }))).toEqual({ ok: false, error: "NotEquivocation" });
    expect(await registry.slash(reporter, first, signed(keys[0]!, { requestId }))).toEqual({ ok: false, error: "NotEquivocation" });
    const forged = { ...second, signature: `0x${"11".repeat(32)}${"22".repeat(32)}1b` as Hex };
    expect((await registry.slash(reporter, first, forged)).ok).toBe(false);
    const [reporterBefore, burnBefore] = [await chain.balance(reporter.address), await chain.balance(BURN)];
    const slashed = await registry.slash(reporter, first, second);
    expect(slashed.ok).toBe(true);
    // The reporter gains half the stake, less its transaction's fee; the other half is burned.
    const fee = slashed.ok ? slashed.value.gasUsed * GAS_PRICE : 0n;
    expect((await chain.balance(reporter.address)) - reporterBefore + fee).toBe(MINIMUM / 2n);
    expect((await chain.balance(BURN)) - burnBefore).toBe(MINIMUM / 2n);
    expect(await registry.stakeOf(deployer, account.address)).toBe(0n);
    expect(await registry.isBonded(deployer, account.address)).toBe(false);
    // Nothing left to take.
    expect(await registry.slash(reporter, first, second)).toEqual({ ok: false, error: "NotRegistered" });
  });

  test("an honest notary never makes the pair: its ledger refuses a second attestation for a request id", async () => {
    const key = keys[0]!;
    const metrics = new NotaryMetrics({ activeSessions: () => 0, failedSessions: () => 0 });
    const deps = { key, ledger: memoryLedger(), context: { publicKeyPem: key.publicKeyPem, algorithm: key.algorithm, testTrustAnchor: false, notaryVersion: "0.1.0", embedded: false }, metrics, log: keptLog(() => "").log };
    const mode = { verify: async () => proxyTranscript() } as unknown as NotaryMode;
    const declared = { requestId: "7f6e5d4c-3b2a-4190-8f7e-6d5c4b3a2910", redactions: [], claims: ["res:body:balance>1000"] };
    const proof = await attest(deps, mode, "s-1", async () => declared);
    const error = await attest(deps, mode, "s-2", async () => ({ ...declared, claims: ["res:body:balance>99999"] })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("already_attested");
    // With its one statement, nobody can slash it.
    const only = { attestation: evmAttestationOf(proof.body), signature: proof.body.evm!.signature as Hex };
    expect(await registry.slash(await chain.account(), only, only)).toEqual({ ok: false, error: "NotEquivocation" });
  });

  test("exit: no longer bonded at once, slashable through the unbonding delay, paid out after it", async () => {
    const account = accounts[1]!;
    expect(await registry.withdraw(account)).toEqual({ ok: false, error: "NotExiting" });
    expect((await registry.requestExit(account)).ok).toBe(true);
    expect(await registry.isBonded(deployer, account.address)).toBe(false);
    expect(await registry.register(account, MINIMUM)).toEqual({ ok: false, error: "Exiting" });
    chain.advance(DELAY_S - 10);
    expect(await registry.withdraw(account)).toEqual({ ok: false, error: "StillUnbonding" });
    chain.advance(10);
    const before = await chain.balance(account.address);
    const paid = await registry.withdraw(account);
    expect(paid.ok).toBe(true);
    const fee = paid.ok ? paid.value.gasUsed * GAS_PRICE : 0n;
    expect((await chain.balance(account.address)) - before + fee).toBe(MINIMUM);
    expect(await registry.stakeOf(deployer, account.address)).toBe(0n);
  });

  test("the calldata `cli notary calldata` prints is what the registry takes: a slash sent raw slashes", async () => {
    const key = generateKey("secp256k1");
    const notary = await chain.accountOf(key.privateKey);
    expect((await registry.register(notary, MINIMUM)).ok).toBe(true);
    const requestId = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d";
    const dir = tempDir("slash");
    const files = [1, 2].map((at) => {
      const path = join(dir, `proof-${at}.json`);
      writeFileSync(path, JSON.stringify(signProof(withEvmAttestation({ ...sampleBody(key), claims: CLAIMS, requestId, notarizedAt: at }, key), key)));
      return path;
    });
    const printed = await cliInProcess(["notary", "calldata", "slash", "--proof", files[0]!, "--proof", files[1]!]);
    expect(printed.stderr).toBe("");
    expect(printed.exitCode).toBe(0);
    const sent = await chain.send(await chain.account(), registry.address, printed.stdout.trim() as Hex);
    expect(sent.reverted).toBe(false);
    expect(await registry.stakeOf(deployer, notary.address)).toBe(0n);
    // And the operator's own calls, sent from the notary's address.
    const other = await chain.accountOf(generateKey("secp256k1").privateKey);
    const register = await cliInProcess(["notary", "calldata", "register"]);
    expect((await chain.send(other, registry.address, register.stdout.trim() as Hex, MINIMUM)).reverted).toBe(false);
    expect(await registry.isBonded(deployer, other.address)).toBe(true);
    const same = await cliInProcess(["notary", "calldata", "slash", "--proof", files[0]!, "--proof", files[0]!]);
    expect(same.exitCode).toBe(1);
    expect(same.stderr).toContain("not an equivocation: they attest the same statement");
  }, 60_000);

  test("a notary that asked to exit is still slashed for what it signed, until it withdrew", async () => {
    const key = generateKey("secp256k1");
    const account = await chain.accountOf(key.privateKey);
    expect((await registry.register(account, 2n * MINIMUM)).ok).toBe(true);
    expect((await registry.requestExit(account)).ok).toBe(true);
    const requestId = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    const slashed = await registry.slash(await chain.account(), signed(key, { requestId, notarizedAt: 1 }), signed(key, { requestId, notarizedAt: 2 }));
    expect(slashed.ok).toBe(true);
    chain.advance(DELAY_S);
    expect(await registry.withdraw(account)).toEqual({ ok: false, error: "NotExiting" });
  });
});
