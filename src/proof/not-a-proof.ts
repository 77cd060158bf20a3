/**
 * What a text given as a proof holds when it is plainly something else: the proof stream's SSE text, the proof
 * event's data with its key part, an error event or error answer, or other JSON. `cli verify` says so in one line
 * instead of a schema error about a missing key. A damaged proof (JSON with a proof's keys) is for the verifier.
 */

/**
 * A JSON object with one of these is a proof or a quorum proof, maybe a damaged one (`version` alone is common:
 * `/info` has one).
 */
const PROOF_KEYS = ["body", "signature", "proofs"];

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** `code: message` of an error shape `{code, message}`, else undefined. */
function codeAndMessage(value: unknown): string | undefined {
  if (!isRecord(value) || typeof value.code !== "string" || typeof value.message !== "string") return undefined;
  return `${value.code}: ${value.message}`;
}

function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  if (!isRecord(value)) return `a ${typeof value}`;
  const keys = Object.keys(value);
  if (keys.length === 0) return "an empty object";
  return `an object with the keys ${keys.slice(0, 6).join(", ")}${keys.length > 6 ? ", …" : ""}`;
}

const SAVE_PROOF = "save the part after the first | (the proof JSON), or let `cli prove --out` save it";

/** SSE text: the error event's words, or how to take the proof out of it. */
function sseText(text: string): string {
  const event = /^event: *(\S+)/m.exec(text)?.[1];
  const data = [...text.matchAll(/^data: ?(.*)$/gm)].map((match) => match[1]).join("\n");
  if (event === "error") {
    try {
      const error = codeAndMessage(JSON.parse(data));
      if (error) return `SSE text of an error event: ${error}`;
    } catch {
      // Not the prover's error data: described as SSE text below.
    }
  }
  return `SSE text (the proof stream as received): ${SAVE_PROOF}`;
}

/** What `text` holds when it is plainly not a proof (a phrase after "the file holds"), else undefined. */
export function notAProof(text: string): string | undefined {
  const trimmed = text.replace(/^\uFEFF/, "").trim();
  if (trimmed === "") return "nothing (it is empty)";
  if (/^(data|id|event|retry):|^:/m.test(trimmed.split("\n", 1)[0] ?? "")) return sseText(trimmed);
  if (trimmed.startsWith("-----BEGIN ") && trimmed.includes("|")) return `the proof event's data (the notary key, then |, then the proof): ${SAVE_PROOF}`;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  const event = codeAndMessage(value);
  if (event) return `an error event: ${event}`;
  const answer = isRecord(value) ? codeAndMessage(value.error) : undefined;
  if (answer) return `an error answer of the prover: ${answer}`;
  if (isRecord(value) && PROOF_KEYS.some((key) => key in value)) return undefined;
  return `JSON that is not a proof: ${jsonKind(value)}`;
}
