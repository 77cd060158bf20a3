/**
 * A proof that the page's own prover holds, by its request id (`/viewer?requestId=`): its proof stream
 * (`GET /proof/{id}`, the client's reader) delivers it once made, or the outcome the store kept; the page says it waits
 * meanwhile. Then it offers the proof as a file and the `cli verify` line that checks that file.
 */
import { openProofStream } from "../client/proof-stream.ts";

/** The proof, or why none came (the prover's code and message). */
export async function proofFromProver(requestId: string, waiting: (text: string) => void): Promise<{ proofText: string } | { problem: string }> {
  waiting(`Asking this prover for the proof of ${requestId}…`);
  try {
    const stream = await openProofStream(location.href, requestId, new Headers(), new AbortController().signal);
    waiting(`Waiting for the proof of ${requestId}: this prover is making it, or will say why none comes.`);
    const outcome = await stream.outcome;
    if (outcome.kind === "error") return { problem: `No proof of ${requestId} from this prover: ${outcome.error.code}: ${outcome.error.message}` };
    return { proofText: outcome.proofText };
  } catch (error) {
    const failure = error as { code?: string; message?: string };
    return { problem: `No proof of ${requestId} from this prover: ${failure.code ?? "error"}: ${failure.message ?? String(error)}` };
  }
}

/** The file's name and the command that checks it, as a reader saves and runs them. */
export function savedProofCommand(requestId: string, proofText: string): { fileName: string; command: string } {
  const fileName = `proof-${requestId.toLowerCase().replace(/[^0-9a-f-]/g, "")}.json`;
  let testAnchor = false;
  try {
    testAnchor = (JSON.parse(proofText) as { body?: { testTrustAnchor?: unknown } }).body?.testTrustAnchor === true;
  } catch {
    // Not JSON: the verdict says so; the command is still the one to run.
  }
  const command = `cli verify --notary-pub-key notary.pub --proof ${fileName} --request-id ${requestId}${testAnchor ? " --allow-test-anchor" : ""}`;
  return { fileName, command };
}

/** A link that saves the proof as a file, and the `cli verify` line for it, in `into`. */
export function offerProofFile(into: HTMLElement, requestId: string, proofText: string): void {
  const { fileName, command } = savedProofCommand(requestId, proofText);
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([proofText], { type: "application/json" }));
  link.download = fileName;
  link.textContent = `Save the proof as ${fileName}`;
  const line = document.createElement("code");
  line.id = "verify-command";
  line.textContent = command;
  const note = document.createTextNode(" then check it offline, the notary's key in notary.pub: ");
  into.replaceChildren(link, note, line);
}
