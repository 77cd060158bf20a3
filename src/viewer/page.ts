/**
 * The proof viewer's script (bundled into /viewer's one HTML page by bundle.ts): verifies in the browser with
 * the code of `cli verify` (verifyProof, verifyQuorum, verifiedProofJson) and shows its report; of a quorum proof,
 * who signed it and the report of its first proof. Proof text is attacker-chosen:
 * it is only ever set as text, never parsed as HTML, and its control, bidirectional and invisible characters are
 * shown as escapes (src/base/terminal-text.ts), in logical order (the page's CSS overrides the bidi algorithm).
 */
import { AppError } from "../core/errors.ts";
import { terminalText, unsafePieces } from "../base/terminal-text.ts";
import {
  DECLARED_BY,
  TEST_TRUST_ANCHOR_WARNING,
  type VerifiedProofJson,
  answerText,
  notaryKindText,
  portText,
  requestText,
  verifiedProofJson,
} from "../proof/render.ts";
import { modeFacts } from "../proof/modes.ts";
import { HIDDEN_BYTE_MARKER, type ProofExpectations, verifyProof } from "../proof/verify.ts";
import { decodePublicKeysPem } from "../proof/keys.ts";
import { type VerifiedQuorum, isQuorumProofText, verifyQuorum } from "../proof/quorum.ts";
import { offerProofFile, proofFromProver } from "./from-prover.ts";

const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

const proofInput = byId<HTMLTextAreaElement>("proof");
const keyInput = byId<HTMLTextAreaElement>("key");
const requestIdInput = byId<HTMLInputElement>("request-id");
const serverNameInput = byId<HTMLInputElement>("server-name");
const urlInput = byId<HTMLInputElement>("url");
const methodInput = byId<HTMLInputElement>("method");
const allowHiddenInput = byId<HTMLInputElement>("allow-hidden-request");
const allowTestAnchorInput = byId<HTMLInputElement>("allow-test-anchor");
const status = byId<HTMLElement>("status");
const report = byId<HTMLElement>("report");

/** Every text shown goes through here: what `cli verify` escapes is shown escaped here too. */
const textNode = (text: string): Text => document.createTextNode(terminalText(text));

function element(tag: string, text?: string, className?: string): HTMLElement {
  const node = document.createElement(tag);
  if (text !== undefined) node.append(textNode(text));
  if (className) node.className = className;
  return node;
}

/** Transcript text with each run of hidden bytes as one marked element (its markers, one per byte, kept). */
function transcriptElement(text: string): HTMLElement {
  const pre = element("pre", undefined, "transcript");
  for (const piece of text.split(new RegExp(`(${HIDDEN_BYTE_MARKER}+)`))) {
    if (piece === "") continue;
    if (piece.startsWith(HIDDEN_BYTE_MARKER)) {
      const hidden = element("mark", piece, "hidden");
      hidden.title = `${piece.length} hidden bytes`;
      hidden.dataset.hiddenBytes = String(piece.length);
      pre.append(hidden);
    } else {
      // Controls and invisible characters are marked where they stand, as their escapes.
      for (const part of unsafePieces(piece)) {
        if (!part.unsafe) pre.append(textNode(part.text));
        else pre.append(element("mark", part.text, "escaped"));
      }
    }
  }
  return pre;
}

function facts(rows: [string, string][]): HTMLElement {
  const list = element("dl");
  for (const [name, value] of rows) {
    list.append(element("dt", name), element("dd", value));
  }
  return list;
}

function redactionTable(json: VerifiedProofJson): HTMLElement {
  const section = element("section");
  section.id = "redactions";
  section.append(element("h2", `Redactions (${DECLARED_BY})`));
  if (json.redactions.length === 0) {
    section.append(element("p", "none declared"));
    return section;
  }
  const table = element("table");
  const head = element("tr");
  head.append(element("th", "pattern"), element("th", "matched"), element("th", "hidden spans"));
  table.append(head);
  for (const { pattern, matched, spans } of json.redactions) {
    const row = element("tr");
    const where = spans.map((span) => `${span.direction} ${span.start}..${span.end}`).join(", ");
    row.append(element("td", pattern), element("td", matched ? "yes" : "no"), element("td", where || "-"));
    table.append(row);
  }
  section.append(table);
  return section;
}

/** The notary's claims, above the transcript: what a proof with claims is for. Nothing when it states none. */
function claimsSection(json: VerifiedProofJson): HTMLElement[] {
  if (json.claims.length === 0 && json.recipient === null) return [];
  const section = element("section");
  section.id = "claims";
  section.append(element("h2", "Claims (stated by the notary on the answer it checked)"));
  const list = element("ul");
  for (const claim of json.claims) list.append(element("li", claim.text, claim.kind === "predicate" && !claim.holds ? "claim-false" : "claim"));
  if (json.claims.length > 0) section.append(list);
  if (json.recipient !== null) section.append(element("p", `Made for ${json.recipient}`));
  return [section];
}

/** What the reader asked the proof to be about (empty fields ask nothing); a link may fill them from its query. */
function expectations(): ProofExpectations {
  const given = (input: HTMLInputElement) => input.value.trim() || undefined;
  const fields = { requestId: given(requestIdInput), serverName: given(serverNameInput), url: given(urlInput), method: given(methodInput)?.toUpperCase() };
  const asked = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  return { ...asked, allowHiddenRequest: allowHiddenInput.checked, allowTestTrustAnchor: allowTestAnchorInput.checked };
}

/** Says which of the reader's expectations the proof met, or that none was given and what that leaves open. */
function bindingText(expected: ProofExpectations): string {
  const met = [expected.requestId && "request id", expected.serverName && "host", expected.url && "URL", expected.method && "method"].filter(Boolean);
  if (met.length === 0) return "No request id, host, URL or method given: this shows the proof is genuine, not that it is about your request.";
  const listed = met.length === 1 ? met[0] : `${met.slice(0, -1).join(", ")} and ${met.at(-1)}`;
  return `Its ${listed} ${met.length === 1 ? "is the one" : "are the ones"} you gave.`;
}

/** The body fields the report's texts read, from the report's JSON. */
const bodyFacts = (json: VerifiedProofJson) => ({
  serverPort: json.serverPort ?? undefined,
  responseFraming: json.responseFraming ?? undefined,
  request: json.responseFraming === null ? undefined : json.request,
  mode: json.mode,
});

/** Who signed a quorum proof, one line per proof, above the report of its first proof. */
function signersSection(quorum: VerifiedQuorum): HTMLElement {
  const section = element("section");
  section.id = "signers";
  section.append(element("h2", `Signed by ${new Set(quorum.notaries).size} distinct notaries (at least ${quorum.required} asked), each in its own session`));
  const list = element("ol");
  for (const proof of quorum.proofs) {
    list.append(element("li", `notary key ${proof.notaryFingerprint} (${proof.body.notary.algorithm}), notarized at ${new Date(proof.body.notarizedAt).toISOString()}`));
  }
  section.append(list, element("p", "They show one request and state the same claims. Below: the first proof, whose answer the prover relayed."));
  return section;
}

function showValid(json: VerifiedProofJson, expected: ProofExpectations, quorum?: VerifiedQuorum): void {
  // A test anchor's proof is genuine only for a test: no green banner.
  status.className = json.testTrustAnchor ? "test-anchor" : "valid";
  const verdict = json.testTrustAnchor ? "Valid only under a TEST trust anchor (not the public web PKI): proof" : "Valid proof";
  const signedBy = quorum ? `a quorum of ${new Set(quorum.notaries).size} notaries` : `notary key ${json.notary.fingerprint}`;
  status.replaceChildren(textNode(`${verdict} from ${json.serverName}, signed by ${signedBy}. `), element("span", bindingText(expected), "binding"));
  const parts: HTMLElement[] = quorum ? [signersSection(quorum)] : [];
  // The proof's own warnings (a test trust anchor) come first in `warnings`.
  parts.push(...json.warnings.map((warning) => element("p", warning, "warning")));
  parts.push(
    facts([
      ["Server name", `${json.serverName} (${portText(bodyFacts(json))})`],
      ["Connected at", `${json.connectionTime.iso} (unix ${json.connectionTime.unix})`],
      ["Answered by", json.responseTime ? `${json.responseTime.iso} (unix ${json.responseTime.unix})` : "not stated (an older proof)"],
      ["Answer", answerText(bodyFacts(json))],
      ["Request", json.request === "hidden" ? "HIDDEN: not shown (see the warning)" : requestText(json)],
      ...(json.hiddenHeaders ? [["Hidden headers", json.hiddenHeaders] as [string, string]] : []),
      ["Notarized at", `${json.notarizedAt.iso} (unix ms ${json.notarizedAt.unixMs})`],
      ["TLS version", json.tlsVersion],
      // A valid proof's mode is one the verifier knows: its facts say what the notary saw.
      ["Proof mode", `${json.mode}: ${modeFacts(json.mode)?.summary}`],
      ["Request id", json.requestId],
      ["Notary key", `${json.notary.fingerprint} (${json.notary.algorithm}, tlsproof ${json.notary.version})`],
      ["Notary", notaryKindText(json.notary.embedded)],
      ["EVM attestation", json.evm ? `valid, signed by ${json.evm.address}` : "none in this proof"],
    ]),
  );
  parts.push(...claimsSection(json));
  parts.push(element("p", `Hidden bytes are marked, one ${HIDDEN_BYTE_MARKER} per byte; their content is not in the proof.`, "legend"));
  for (const [title, view] of [["Request (sent)", json.sent], ["Response (received)", json.recv]] as const) {
    const section = element("section");
    section.append(element("h2", `${title}: ${view.length} bytes, ${view.hiddenBytes} hidden`), transcriptElement(view.text));
    parts.push(section);
  }
  parts.push(redactionTable(json));
  report.replaceChildren(...parts);
}

function showInvalid(reason: string): void {
  status.className = "invalid";
  status.replaceChildren(textNode(reason));
  report.replaceChildren();
}

/** Verifies what the two fields hold; says what is missing while either is empty. */
function verifyInputs(): void {
  const proofText = proofInput.value.trim();
  const keyText = keyInput.value.trim();
  if (proofText === "" || keyText === "") {
    status.className = "waiting";
    status.textContent = proofText === "" ? "Drop, paste or load a proof." : "Paste or load the notary's public key, or take this prover's.";
    report.replaceChildren();
    return;
  }
  const expected = expectations();
  try {
    const keys = decodePublicKeysPem(keyText);
    if (isQuorumProofText(proofText)) {
      const quorum = verifyQuorum([proofText], keys, undefined, expected);
      showValid(verifiedProofJson(quorum.proofs[0]!), expected, quorum);
    } else {
      showValid(verifiedProofJson(verifyProof(proofText, keys, expected)), expected);
    }
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const reasons: Partial<Record<string, string>> = { config_invalid: "The notary key or the URL you gave is not usable", proof_mismatch: "Not the proof you asked for" };
    showInvalid(`${reasons[error.code] ?? "Invalid"}: ${error.message}`);
  }
}

async function loadFile(file: File | undefined, into: HTMLTextAreaElement): Promise<void> {
  if (!file) return;
  into.value = await file.text();
  verifyInputs();
}

/** Every notary key this prover's /info names: a proof of any of them, or a quorum proof of several, verifies. */
async function useProverKey(): Promise<void> {
  try {
    const answer = await fetch(new URL("/info", location.href));
    const info = (await answer.json()) as { notaries?: { publicKey?: unknown }[] };
    const keys = (info.notaries ?? []).map((notary) => notary.publicKey).filter((key): key is string => typeof key === "string");
    if (!answer.ok || keys.length === 0) throw new Error(`answer ${answer.status}`);
    keyInput.value = keys.join("");
    verifyInputs();
  } catch (error) {
    showInvalid(`Cannot take the keys from this prover's /info (${(error as Error).message}); paste them instead.`);
  }
}

const query = new URLSearchParams(location.search);
requestIdInput.value = query.get("requestId") ?? "";
serverNameInput.value = query.get("serverName") ?? "";
urlInput.value = query.get("url") ?? "";
methodInput.value = query.get("method") ?? "";
allowHiddenInput.checked = query.get("allowHiddenRequest") === "1";
allowTestAnchorInput.checked = query.get("allowTestAnchor") === "1";
for (const input of [proofInput, keyInput, requestIdInput, serverNameInput, urlInput, methodInput, allowHiddenInput, allowTestAnchorInput]) input.addEventListener("input", verifyInputs);
byId<HTMLInputElement>("proof-file").addEventListener("change", (event) => loadFile((event.target as HTMLInputElement).files?.[0], proofInput));
byId<HTMLInputElement>("key-file").addEventListener("change", (event) => loadFile((event.target as HTMLInputElement).files?.[0], keyInput));
byId<HTMLButtonElement>("prover-key").addEventListener("click", () => void useProverKey());
// A page saved as a file has no prover behind it.
if (location.protocol === "file:") byId<HTMLButtonElement>("prover-key").disabled = true;

/** `?requestId=` on a page its prover serves: that proof from the prover, once made, checked with this prover's key unless one was given. */
async function loadFromProver(requestId: string): Promise<void> {
  const loaded = await proofFromProver(requestId, (text) => {
    status.className = "waiting";
    status.replaceChildren(textNode(text));
  });
  if ("problem" in loaded) return showInvalid(loaded.problem);
  proofInput.value = loaded.proofText;
  offerProofFile(byId<HTMLElement>("saved"), requestId, loaded.proofText);
  if (keyInput.value.trim() === "") await useProverKey();
  else verifyInputs();
}
document.addEventListener("dragover", (event) => event.preventDefault());
document.addEventListener("drop", (event) => {
  event.preventDefault();
  void loadFile(event.dataTransfer?.files[0], proofInput);
});
verifyInputs();
const askedId = query.get("requestId");
if (askedId && location.protocol !== "file:") void loadFromProver(askedId);
