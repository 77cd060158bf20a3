import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildClientBundle } from "../../scripts/build-client.ts";
import { signedSample } from "../proof/fixtures.ts";
import { scratchDir } from "../../testkit/env.ts";

/**
 * The bundled client (`tlsproof/client` for runtimes without TypeScript) in Node.js: verification with the
 * code of `cli verify`, typed redactions and the SSE reader, with Node's own web APIs only.
 */
test("the client bundle runs in Node: verifies a proof, refuses a tampered one, builds T-REDACTED, reads SSE", async () => {
  const dir = scratchDir("client-node");
  const bundle = await buildClientBundle(dir);
  const { key, proof } = signedSample("secp256r1");
  writeFileSync(join(dir, "proof.json"), JSON.stringify(proof));
  writeFileSync(join(dir, "notary.pub"), key.publicKeyPem);
  const script = `
    import { readFileSync } from "node:fs";
    import { verifyProof, redact, redactionHeader, readSseEvents, TlsproofError } from ${JSON.stringify(bundle)};
    const proofText = readFileSync(${JSON.stringify(join(dir, "proof.json"))}, "utf8");
    const key = readFileSync(${JSON.stringify(join(dir, "notary.pub"))}, "utf8");
    const verified = verifyProof(proofText, [key]);
    let tampered;
    try { verifyProof(proofText.replace('"serverName":"', '"serverName":"x'), key); } catch (error) { tampered = error instanceof TlsproofError && error.code; }
    const stream = new Response("data: a\\r\\ndata: b\\n\\nevent: error\\ndata: {}\\n\\n").body;
    const events = [];
    for await (const event of readSseEvents(stream)) events.push(event.event + ":" + event.data);
    console.log(JSON.stringify({
      serverName: verified.body.serverName,
      recv: verified.recv.text,
      tampered,
      header: redactionHeader([redact.responseBody("a.b", 0), redact.search("x,y")]),
      events,
    }));
  `;
  const child = Bun.spawn(["node", "--input-type=module", "-e", script], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  expect(stderr).toBe("");
  expect(exitCode).toBe(0);
  const out = JSON.parse(stdout) as { serverName: string; recv: string; tampered: string; header: string; events: string[] };
  expect(out.serverName).toBe(proof.body.serverName);
  expect(out.recv).toContain("█");
  expect(out.tampered).toBe("proof_invalid");
  expect(out.header).toBe("res:body:a\\.b.0,search:x\\,y");
  expect(out.events).toEqual(["message:a\nb", "error:{}"]);
});
