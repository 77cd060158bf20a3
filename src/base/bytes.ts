/**
 * Byte helpers on web-standard APIs only (atob/btoa, Uint8Array): the proof verifier runs in browsers too (the
 * viewer page, `tlsproof/client`), where Node's Buffer does not exist.
 */

/** Bytes of base64 text (padding and whitespace as `atob` allows), or null when it is not base64. */
export function base64ToBytes(text: string): Uint8Array | null {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  // In slices: String.fromCharCode takes its bytes as arguments, and arguments are limited.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** `chunks` joined in order; `length` is their total when the caller counted it already. */
export function concatBytes(chunks: readonly Uint8Array[], length = chunks.reduce((sum, chunk) => sum + chunk.length, 0)): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
