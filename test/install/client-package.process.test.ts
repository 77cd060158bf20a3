import { expect, test } from "bun:test";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLIENT_PACKAGE, clientTarballName, packClient } from "../../scripts/pack-client.ts";
import { tempDir } from "../../testkit/env.ts";
import { REPO } from "../../testkit/prover.ts";
import { signedSample } from "../proof/fixtures.ts";
import { run } from "./support.ts";

/**
 * The release's client package (`tlsproof-client-<v>.tgz`, as build-all packs it) installed the way the README says,
 * `npm install ./tlsproof-client-<v>.tgz`, into a fresh Node project, offline: it needs nothing from a registry. Node
 * imports it by name and verifies a proof with it; TypeScript sees its types (a wrong type is an error), and a strict
 * project compiles them without skipLibCheck.
 */
test("the client tarball installs offline into a Node project, imports by name, verifies a proof, and carries self-contained types", async () => {
  const dir = tempDir("client-package");
  const tarball = await packClient(join(dir, "release"), "9.8.7");
  expect(tarball).toBe(join(dir, "release", clientTarballName("9.8.7")));

  const project = join(dir, "app");
  run(["mkdir", "-p", project], dir);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", type: "module", private: true }));
  // --offline: a package that needed anything from the registry would fail here.
  const install = run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], project);
  expect(install.stderr).not.toContain("ERR");
  expect(install.code).toBe(0);
  expect(JSON.parse(readFileSync(join(project, "node_modules", CLIENT_PACKAGE, "package.json"), "utf8")).version).toBe("9.8.7");

  const { key, proof } = signedSample("secp256r1");
  writeFileSync(join(project, "proof.json"), JSON.stringify(proof));
  writeFileSync(join(project, "notary.pub"), key.publicKeyPem);
  writeFileSync(
    join(project, "check.mjs"),
    `import { readFileSync } from "node:fs";
     import { prove, verifyProof, redact, TlsproofError } from "${CLIENT_PACKAGE}";
     const verified = verifyProof(readFileSync("proof.json", "utf8"), [readFileSync("notary.pub", "utf8")]);
     let refused;
     try { await prove({ prover: "http://127.0.0.1:1", url: "https://a.test/" }); } catch (error) { refused = error instanceof TlsproofError && error.code; }
     console.log(JSON.stringify({ serverName: verified.body.serverName, refused, pattern: redact.responseBody("balance") }));`,
  );
  const node = run(["node", "check.mjs"], project);
  expect(node.stderr).toBe("");
  expect(JSON.parse(node.stdout)).toEqual({ serverName: proof.body.serverName, refused: "config_invalid", pattern: { kind: "res:body", path: ["balance"] } });

  // Types: every prove() option is typed (mode, reveal, onResponse...), and a wrong one is an error.
  writeFileSync(
    join(project, "typed.ts"),
    `import { prove, redact, type ProveOptions, type ProveResult } from "${CLIENT_PACKAGE}";
     const options: ProveOptions = { prover: "http://127.0.0.1:8080", notaryKeys: ["pem"], url: "https://a.test/", mode: "proxy", reveal: "request",
       redact: [redact.requestHeader("authorization")], onResponse: (response) => void response.status };
     export const host = async (): Promise<string> => ((await prove(options)) satisfies ProveResult).verified.body.serverName;
     export const wrong: number = (await prove(options)).verified.body.serverName;`,
  );
  // A demanding consumer: strict and stricter, no skipLibCheck (every declaration it loads is checked), no @types.
  // In either ESM resolution the package's declarations compile with nothing but TypeScript's own libraries.
  const strictest = { strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, noEmit: true, target: "es2022", types: [] };
  const resolutions = { nodenext: { module: "nodenext", moduleResolution: "nodenext" }, bundler: { module: "esnext", moduleResolution: "bundler" } };
  for (const [name, resolution] of Object.entries(resolutions)) {
    writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions: { ...strictest, ...resolution }, files: ["typed.ts"] }));
    const tsc = run([join(REPO, "node_modules", ".bin", "tsc"), "-p", `tsconfig.${name}.json`], project);
    // The one error is the deliberate one: the types resolved (else `mode` would be any and nothing would be reported).
    const errors = tsc.stdout.split("\n").filter((line) => /error TS/.test(line));
    expect({ name, errors }).toEqual({ name, errors: [expect.stringMatching(/^typed\.ts\(5,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/)] });
  }

  // No declaration it ships names a package (valibot, @noble/curves, bun...), not even one its entry does not reach.
  const types = join(project, "node_modules", CLIENT_PACKAGE, "types");
  const imported = readdirSync(types, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".d.ts"))
    .flatMap((file) => [...readFileSync(join(types, file), "utf8").matchAll(/(?:from|import\()\s*"([^"]+)"|reference types="([^"]+)"/g)].map((match) => `${file}: ${match[1] ?? match[2]}`));
  expect(imported.length).toBeGreaterThan(0);
  expect(imported.filter((line) => !/: \.\.?\//.test(line))).toEqual([]);
}, 120_000);
