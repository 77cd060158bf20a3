/**
 * What `cli verify` prints for a verified proof: a report for people, or JSON for scripts.
 */
import { type AnswerJson, answerJson } from "./answer-json.ts";
import type { DeclaredRedaction, ProofBody, ProofMode, RequestVisibility, ResponseFraming, SignatureAlgorithm } from "./format.ts";
import { isHiddenRequest } from "./check.ts";
import { modeFactsOf, modeText } from "./modes.ts";
import { isCheckedBody, proofModeOf } from "./older-proofs.ts";
import type { ByteRange, Direction } from "../core/transcript.ts";
import { coverageText, describeHiddenRanges, type HiddenRange } from "./hidden-ranges.ts";
import type { VerifiedEvmAttestation } from "./evm-attestation.ts";
import { encodePublicKeyPem } from "./keys.ts";
import { terminalLine } from "../base/terminal-text.ts";
import { type ClaimJson, claimJson, claimLine } from "../claims/claim.ts";
import type { VerifiedQuorum } from "./quorum.ts";
import { HIDDEN_BYTE_MARKER, HIDDEN_REQUEST_LIMIT, TEST_TRUST_ANCHOR_WARNING, type TranscriptView, type VerifiedProof } from "./verify.ts";

export { TEST_TRUST_ANCHOR_WARNING } from "./verify.ts";

/** Redaction labels are the prover's own words; only the spans and the hidden bytes are checked. */
export const DECLARED_BY = "declared by the prover";

/** A declared redaction as reported: its label is the prover's claim, not a checked fact. */
export interface DeclaredRedactionJson extends DeclaredRedaction {
  declaredBy: "prover";
}

export interface TranscriptJson {
  length: number;
  revealedBytes: number;
  hiddenBytes: number;
  /** TranscriptView.text: one "█" per hidden byte. */
  text: string;
  /** Revealed ranges with their exact bytes (base64), for scripts that need bytes rather than text. */
  revealed: { start: number; end: number; data: string }[];
}

export interface VerifiedProofJson {
  valid: true;
  requestId: string;
  serverName: string;
  /** The port the notary dialled; null in MPC mode (no notary dials) and in older proofs. */
  serverPort: number | null;
  connectionTime: { unix: number; iso: string };
  /** When the exchange ended as the notary saw it; null in older proofs. */
  responseTime: { unix: number; iso: string } | null;
  /** How the answer was framed, as the notary checked it; null in older proofs, whose answer nobody checked. */
  responseFraming: ResponseFraming | null;
  /** Whether the proof shows the request ("hidden": it does not show which request the answer answers). */
  request: RequestVisibility;
  /** The revealed request's first line as the proof shows it (hidden bytes as markers); null when the request is hidden. */
  requestLine: string | null;
  /** The value of its one Host header as shown; null when the request is hidden or does not show one. */
  host: string | null;
  tlsVersion: ProofBody["tlsVersion"];
  /** How the notary took part; proofs made before proxy mode say nothing and are MPC proofs. */
  mode: ProofMode;
  notarizedAt: { unixMs: number; iso: string };
  testTrustAnchor: boolean;
  /** `embedded`: signed by a prover's embedded notary (true), a standalone one (false), or not stated (null: an older proof). */
  notary: { algorithm: SignatureAlgorithm; publicKey: string; fingerprint: string; version: string; embedded: boolean | null };
  /** The checked EVM attestation (address, EIP-712 digest, signature); null when the proof has none. */
  evm: VerifiedEvmAttestation | null;
  hiddenByteMarker: string;
  sent: TranscriptJson;
  recv: TranscriptJson;
  redactions: DeclaredRedactionJson[];
  /** Every hidden range and what it covers, as far as the revealed bytes show. */
  hiddenRanges: HiddenRange[];
  /** What the request's hidden header values may still do, in one sentence; null when it hides none. */
  hiddenHeaders: string | null;
  /** The proven answer as a program reads it: status, header fields, body text and JSON (answer-json.ts). */
  answer: AnswerJson;
  /** What the notary stated of the answer beyond its bytes, in the order asked (claimJson). */
  claims: ClaimJson[];
  /** The lower-case Ethereum address the proof was made for; null when it names none. */
  recipient: string | null;
  /** The proof's own warnings (a test trust anchor), then one line per hidden range that is not a whole value. */
  warnings: string[];
}

/** Who ran the notary, as the proof says: an embedded notary is the prover's operator, so it vouches for itself. */
export function notaryKindText(embedded: boolean | null): string {
  if (embedded === true) return "embedded in the prover (the prover's operator also ran the notary)";
  if (embedded === false) return "standalone (not a prover's embedded notary)";
  return "not stated (a proof from before this was recorded)";
}

const isoOfMs = (ms: number): string => {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? "invalid date" : date.toISOString();
};

const transcriptJson = (view: TranscriptView): TranscriptJson => ({
  length: view.length,
  revealedBytes: view.revealedBytes,
  hiddenBytes: view.length - view.revealedBytes,
  text: view.text,
  revealed: view.revealed.map(({ start, end, data }) => ({ start, end, data })),
});

const rangeText = (range: HiddenRange): string => `${range.direction} ${spanText(range)} (${range.end - range.start} bytes)`;

function partialWarnings(ranges: readonly HiddenRange[]): string[] {
  return ranges.filter((range) => !range.whole).map((range) => `WARNING: hidden ${rangeText(range)} is not a whole value; it may cut one in two`);
}

/** The request line and Host as the revealed request shows them (hidden bytes as markers); nulls for a hidden request. */
export function shownRequest(body: Pick<ProofBody, "request" | "mode" | "transcript">, sent: TranscriptView): { requestLine: string | null; host: string | null } {
  if (isHiddenRequest(body)) return { requestLine: null, host: null };
  const [requestLine = "", ...fields] = sent.text.split("\r\n");
  const head = fields.slice(0, Math.max(0, fields.indexOf("")));
  const hosts = head.map((line) => /^host:[ \t]*(.*?)[ \t]*$/i.exec(line)?.[1]).filter((value) => value !== undefined);
  return { requestLine, host: hosts.length === 1 ? hosts[0]! : null };
}

export function verifiedProofJson(proof: VerifiedProof): VerifiedProofJson {
  const { body } = proof;
  const hiddenRanges = describeHiddenRanges(body.transcript);
  return {
    valid: true,
    requestId: body.requestId,
    serverName: body.serverName,
    serverPort: body.serverPort ?? null,
    connectionTime: { unix: body.connectionTime, iso: isoOfMs(body.connectionTime * 1000) },
    responseTime: body.responseTime === undefined ? null : { unix: body.responseTime, iso: isoOfMs(body.responseTime * 1000) },
    responseFraming: body.responseFraming ?? null,
    request: isHiddenRequest(body) ? "hidden" : "revealed",
    ...shownRequest(body, proof.sent),
    tlsVersion: body.tlsVersion,
    mode: proofModeOf(body),
    notarizedAt: { unixMs: body.notarizedAt, iso: isoOfMs(body.notarizedAt) },
    testTrustAnchor: body.testTrustAnchor,
    notary: {
      algorithm: proof.notaryKey.algorithm,
      publicKey: encodePublicKeyPem(proof.notaryKey),
      fingerprint: proof.notaryFingerprint,
      version: body.notaryVersion,
      embedded: body.notary.embedded ?? null,
    },
    evm: proof.evm,
    hiddenByteMarker: HIDDEN_BYTE_MARKER,
    sent: transcriptJson(proof.sent),
    recv: transcriptJson(proof.recv),
    redactions: body.redactions.map((redaction) => ({ ...redaction, declaredBy: "prover" })),
    hiddenRanges,
    hiddenHeaders: proof.hiddenHeaders,
    answer: answerJson(body.transcript.recv, HIDDEN_BYTE_MARKER),
    claims: proof.claims.map(claimJson),
    recipient: proof.recipient,
    warnings: [...proof.warnings, ...partialWarnings(hiddenRanges)],
  };
}

const spanText = ({ start, end }: ByteRange): string => `${start}..${end}`;
const directionTitle: Record<Direction, string> = { sent: "Request (sent)", recv: "Response (received)" };

/**
 * What marks a transcript line in the report: every line of a transcript starts with it, and no line of the report's
 * own does, so a target's answer that imitates the report's lines still reads as the answer.
 */
export const TRANSCRIPT_GUTTER = "│ ";

function transcriptSection(direction: Direction, view: TranscriptView): string[] {
  const hidden = view.length - view.revealedBytes;
  // A line ends at CR LF or a bare LF; a bare CR stays in its line, escaped.
  const lines = view.text.split(/\r?\n/);
  return [`${directionTitle[direction]}: ${view.length} bytes, ${hidden} hidden`, ...lines.map((line) => `${TRANSCRIPT_GUTTER}${terminalLine(line)}`)];
}

/** The report's last line: the verdict and the server again, after everything the proof's own text filled. */
function verdictLine(proof: VerifiedProof): string {
  const anchor = proof.body.testTrustAnchor ? "valid only under a TEST trust anchor (not the public web PKI)" : "valid";
  return `Verdict: ${anchor}, a proof of ${proof.body.serverName} (${portText(proof.body)}), signed by notary key ${proof.notaryFingerprint}`;
}

function hiddenRangeLines(ranges: readonly HiddenRange[]): string[] {
  if (ranges.length === 0) return ["Hidden ranges: none"];
  return [
    "Hidden ranges (what each covers, as far as the revealed bytes show):",
    ...ranges.map((range) => `  ${rangeText(range)}: ${range.whole ? "" : "WARNING: "}${coverageText(range.covers)}`),
  ];
}

function redactionLines(redactions: DeclaredRedaction[]): string[] {
  if (redactions.length === 0) return [`Redactions ${DECLARED_BY}: none`];
  return [
    `Redactions ${DECLARED_BY} (labels are the prover's word; the spans are checked to be hidden):`,
    ...redactions.map(({ pattern, matched, spans }) => {
      const where = matched ? spans.map((span) => `${span.direction} ${spanText(span)}`).join(", ") : "no match";
      return `  ${JSON.stringify(pattern)}: ${where}`;
    }),
  ];
}

/** The claims, each on a line a person reads, above the transcript: they are what a proof with claims is for. */
function claimLines({ claims, recipient }: VerifiedProof): string[] {
  const made = recipient === null ? [] : [`Made for:     ${recipient}`];
  if (claims.length === 0) return made;
  return [...made, "Claims (stated by the notary on the answer it checked):", ...claims.map((claim) => `  ${claimLine(claim)}`)];
}

function evmLine({ evm, notaryKey }: VerifiedProof): string {
  if (evm) return `EVM attestation: valid, signed by ${evm.address} (EIP-712 digest ${evm.digest})`;
  return notaryKey.algorithm === "secp256k1"
    ? "EVM attestation: none (the notary made none: a proof from before EVM attestations)"
    : `EVM attestation: none (a ${notaryKey.algorithm} notary key cannot make one; EVM attestations need secp256k1)`;
}

/** The port, as the proof states it or why it does not. */
export function portText(body: Pick<ProofBody, "serverPort" | "mode" | "request">): string {
  if (body.serverPort !== undefined) return `port ${body.serverPort}, dialled by the notary`;
  return isCheckedBody(body) ? `port not attested (a notary in ${proofModeOf(body)} mode never dials the server)` : "port not stated (an older proof)";
}

/** The answer's check, as the proof states it. */
export function answerText(body: Pick<ProofBody, "responseFraming">): string {
  const framing = body.responseFraming;
  if (framing === undefined) return "not checked (a proof from before notaries checked answers)";
  const how = { "content-length": "its Content-Length", chunked: "chunked encoding, through its last chunk", close: "the server closing the connection", "no-body": "having no body" }[framing];
  return `one complete HTTP/1.1 answer, framed by ${how} (${framing}), checked by the notary`;
}

/** Whether the proof shows the request (its request line and Host), and what a hidden one leaves unproven. */
export function requestText(shown: { requestLine: string | null; host: string | null }): string {
  if (shown.requestLine === null) return `HIDDEN: this proof's ${HIDDEN_REQUEST_LIMIT}`;
  return `revealed: ${shown.requestLine} (Host: ${shown.host ?? "not shown"})`;
}

/**
 * The human report, terminal-safe throughout (request ids and transcripts are attacker-chosen text): every line
 * passes terminalLine, every transcript line carries the gutter. The trust-anchor warning opens it and stands
 * before its last line, the verdict, so neither can be scrolled past or imitated.
 */
export function renderVerifiedProof(proof: VerifiedProof): string {
  const { body } = proof;
  const hiddenRanges = describeHiddenRanges(body.transcript);
  const warning = proof.warnings;
  const lines = [
    ...warning,
    `Proof valid: signed by notary key ${proof.notaryFingerprint} (${proof.notaryKey.algorithm}, tlsproof ${body.notaryVersion})`,
    `Server:       ${body.serverName} (${portText(body)})`,
    `Connected at: ${isoOfMs(body.connectionTime * 1000)} (unix ${body.connectionTime})`,
    `Answered by:  ${body.responseTime === undefined ? "not stated (an older proof)" : `${isoOfMs(body.responseTime * 1000)} (unix ${body.responseTime})`}`,
    `Answer:       ${answerText(body)}`,
    `Request:      ${requestText(shownRequest(body, proof.sent))}`,
    ...(proof.hiddenHeaders ? [`              (${proof.hiddenHeaders})`] : []),
    `TLS version:  ${body.tlsVersion}`,
    `Proof mode:   ${modeText(modeFactsOf(body))}`,
    `Request id:   ${body.requestId}`,
    `Notarized at: ${isoOfMs(body.notarizedAt)}`,
    `Notary:       ${notaryKindText(body.notary.embedded ?? null)}`,
    evmLine(proof),
    ...claimLines(proof),
    `Hidden bytes are shown as ${HIDDEN_BYTE_MARKER}, one per byte.`,
    "",
    ...transcriptSection("sent", proof.sent),
    "",
    ...transcriptSection("recv", proof.recv),
    "",
    ...hiddenRangeLines(hiddenRanges),
    "",
    ...redactionLines(body.redactions),
    ...partialWarnings(hiddenRanges),
    ...warning,
    verdictLine(proof),
  ];
  // Escaping is idempotent (an escape is printable ASCII): the transcript lines, escaped already, pass unchanged.
  return `${lines.map(terminalLine).join("\n")}\n`;
}

/** A verified quorum as a program reads it: its size, server, claims, signers, and each proof's report. */
export function quorumJson(quorum: VerifiedQuorum) {
  return {
    valid: true,
    quorum: quorum.required,
    serverName: quorum.serverName,
    requestLine: quorum.requestLine,
    claims: quorum.claims.map(claimJson),
    notaries: quorum.notaries,
    proofs: quorum.proofs.map(verifiedProofJson),
  };
}

/** The human report of a quorum: who signed what, the claims they agree on, a line per proof. */
export function renderQuorum(quorum: VerifiedQuorum): string {
  const lines = [
    ...new Set(quorum.proofs.flatMap((proof) => proof.warnings)),
    `Quorum valid (at least ${quorum.required}): ${quorum.proofs.length} proofs of ${quorum.serverName} by ${new Set(quorum.notaries).size} distinct notaries show one request and state the same claims:`,
    `Request: ${quorum.requestLine}`,
    "Claims:",
    ...quorum.claims.map((claim) => `  ${claimLine(claim)}`),
    "Proofs:",
    ...quorum.proofs.map(
      (proof, i) => `  ${i + 1}. request id ${proof.body.requestId}, ${proofModeOf(proof.body)} mode, notarized at ${isoOfMs(proof.body.notarizedAt)}, signed by notary key ${proof.notaryFingerprint}`,
    ),
  ];
  return `${lines.map(terminalLine).join("\n")}\n`;
}
